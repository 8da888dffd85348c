// loadMcpToolCatalog: OpenClaw's read-only views (the composer's Tool access
// view, gateway method tools.effective) list the MCP tools of the session's
// thread on the cluster. The dispatcher's …/mcp-inventory reads the bound
// native thread's catalog and never starts a process, thread or turn for it;
// a session with no bound thread (or no AgentSession yet) has no live
// catalog, which is undefined here. Any other failure is thrown: OpenClaw
// logs it with the session and shows the servers as not connected.
import {
  type AgentHarnessV2,
  assignMcpCatalogSafeServerNames,
  type McpToolCatalog,
} from "openclaw/plugin-sdk/agent-harness-runtime";

import type { DispatcherClient } from "./client.js";
import { DispatcherError } from "./dispatcher-error.js";
import { sessionName } from "./session-name.js";
import type * as wire from "./wire.js";

export type McpCatalogParams = Parameters<NonNullable<AgentHarnessV2["loadMcpToolCatalog"]>>[0];
type CatalogTool = McpToolCatalog["tools"][number];
type ToolOverrides = McpCatalogParams["toolOverrides"];

/** What the view shows for a server the cluster's catalog lists. */
export const LAUNCH_SUMMARY = "MCP connection of the session's harness on the cluster";

/** The catalog of the session's bound thread on the cluster, bounded to mcpServerNames. */
export async function loadMcpToolCatalog(
  params: McpCatalogParams,
  deps: { client: Pick<DispatcherClient, "mcpInventory">; now?: () => number },
): Promise<McpToolCatalog | undefined> {
  let answer: unknown;
  try {
    answer = await deps.client.mcpInventory(sessionName(params.sessionId));
  } catch (err) {
    if (err instanceof DispatcherError && NO_LIVE_CATALOG.has(err.wire.code)) return undefined;
    throw err;
  }
  return mcpCatalog(inventory(answer), params.mcpServerNames, params.toolOverrides, (deps.now ?? Date.now)());
}

// No bound thread, or no AgentSession: no turn of the session ran on the
// cluster since it was created or reset, so nothing is connected.
const NO_LIVE_CATALOG: ReadonlySet<string> = new Set<wire.ErrorCode>(["NoNativeThread", "SessionNotFound"]);

/**
 * OpenClaw's McpToolCatalog of a thread's inventory, for the servers of
 * names only: raw server and tool names kept, collision-safe server names
 * assigned over the whole bounded set (so a server's safe name does not
 * depend on which others are connected), and the tools a session override
 * denies kept apart in sessionDeniedTools. The plugin sends those denies as
 * the server's disabledTools, so the cluster's Codex does not list them:
 * they are named from the override.
 */
export function mcpCatalog(inv: wire.MCPInventory, names: readonly string[], overrides: ToolOverrides, generatedAt: number): McpToolCatalog {
  const allowed = new Set(names);
  const safeNames = assignMcpCatalogSafeServerNames(names);
  const byName = new Map<string, wire.MCPServerInventory>();
  for (const s of inv.servers) if (allowed.has(s.name) && !byName.has(s.name)) byName.set(s.name, s);
  const catalog: McpToolCatalog = { version: 1, generatedAt, servers: {}, tools: [] };
  const denied: CatalogTool[] = [];
  const diagnostics: NonNullable<McpToolCatalog["diagnostics"]>[number][] = [];
  for (const server of [...byName.values()].sort((a, b) => compare(a.name, b.name))) {
    const safeServerName = safeNames.get(server.name) ?? server.name;
    const denies = overrides?.mcpToolsDeny;
    const deniedNames = new Set(denies !== undefined && Object.hasOwn(denies, server.name) ? (denies[server.name] ?? []) : []);
    const listed = new Set<string>();
    for (const tool of [...server.tools].sort((a, b) => compare(a.name, b.name))) {
      if (listed.has(tool.name)) continue;
      listed.add(tool.name);
      const entry = catalogTool(server.name, safeServerName, tool.name, tool, deniedNames.has(tool.name));
      (deniedNames.has(tool.name) ? denied : catalog.tools).push(entry);
    }
    const unlisted = [...deniedNames].filter((t) => !listed.has(t)).sort(compare);
    for (const t of unlisted) denied.push(catalogTool(server.name, safeServerName, t, undefined, true));
    catalog.servers[server.name] = { serverName: server.name, safeServerName, launchSummary: LAUNCH_SUMMARY, toolCount: listed.size + unlisted.length };
    if (server.error !== undefined && server.error !== "") {
      diagnostics.push({ serverName: server.name, safeServerName, launchSummary: LAUNCH_SUMMARY, message: server.error });
    }
  }
  if (denied.length > 0) catalog.sessionDeniedTools = denied;
  if (diagnostics.length > 0) catalog.diagnostics = diagnostics;
  return catalog;
}

function catalogTool(serverName: string, safeServerName: string, toolName: string, tool: wire.MCPTool | undefined, deniedBySession: boolean): CatalogTool {
  const description = tool?.description !== undefined && tool.description.trim() !== "" ? tool.description : undefined;
  const schema = isRecord(tool?.inputSchema) ? tool.inputSchema : { type: "object" };
  const out: CatalogTool = {
    serverName,
    safeServerName,
    toolName,
    inputSchema: schema as unknown as CatalogTool["inputSchema"],
    fallbackDescription: description ?? toolName,
  };
  if (description !== undefined) out.description = description;
  if (deniedBySession) out.deniedBySession = true;
  return out;
}

/** The dispatcher's answer as wire.MCPInventory; a malformed one is an error naming the field. */
export function inventory(v: unknown): wire.MCPInventory {
  const bad = (field: string, what: string) => new Error(`the dispatcher's MCP inventory: ${field}: ${what}`);
  if (!isRecord(v)) throw bad("(answer)", "not a JSON object");
  if (!Array.isArray(v.servers)) throw bad("servers", "not an array");
  const servers = v.servers.map((s: unknown, i): wire.MCPServerInventory => {
    const at = `servers[${i}]`;
    if (!isRecord(s) || typeof s.name !== "string" || s.name === "") throw bad(`${at}.name`, "not a name");
    const tools = s.tools ?? [];
    if (!Array.isArray(tools)) throw bad(`${at}.tools`, "not an array");
    const out: wire.MCPServerInventory = {
      name: s.name,
      tools: tools.map((t: unknown, j): wire.MCPTool => {
        if (!isRecord(t) || typeof t.name !== "string" || t.name === "") throw bad(`${at}.tools[${j}].name`, "not a name");
        const tool: wire.MCPTool = { name: t.name };
        if (typeof t.description === "string") tool.description = t.description;
        if (t.inputSchema !== undefined) tool.inputSchema = t.inputSchema;
        return tool;
      }),
    };
    if (typeof s.status === "string") out.status = s.status;
    if (typeof s.error === "string") out.error = s.error;
    return out;
  });
  return { threadId: typeof v.threadId === "string" ? v.threadId : "", servers };
}

// Code-point order: the same on every machine (the dispatcher sorts by byte).
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
