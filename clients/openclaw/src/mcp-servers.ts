// The MCP servers OpenClaw's config names (mcp.servers), as the turn's
// mcpServers: the cluster's Codex connects to them for the turn, as
// OpenClaw's own Codex harness connects to the same servers. A server the
// wire cannot carry is refused before the turn is sent, naming the server
// and its field: running the turn without it would silently take tools
// away from the agent, and every other answer would relax what OpenClaw's
// config says (a header it sends, a certificate it checks, an approval it
// asks for). Pure: no I/O.
import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import type * as wire from "./wire.js";

export type McpInput = Pick<AgentHarnessAttemptParamsV2, "config" | "toolOverrides" | "disableTools" | "toolsAllow">;

/** The turn's mcpServers, or why one configured server (named) cannot go with it. */
export type McpForwarding = { servers: wire.MCPServer[] } | Refused;
type Refused = { refused: string; server: string };

// The cluster's Codex joins a server's name into its tool names
// (mcp__<name>__<tool>); the dispatcher admits only these names.
const SERVER_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** The servers OpenClaw would connect for this attempt, as the turn carries them. */
export function forwardedMcpServers(p: McpInput): McpForwarding {
  const configured = p.config?.mcp?.servers;
  if (!isRecord(configured) || !mayUseMcp(p)) return { servers: [] };
  const servers: wire.MCPServer[] = [];
  for (const name of Object.keys(configured).sort()) {
    const server = configured[name];
    if (!isRecord(server) || !enabled(name, server, p.toolOverrides)) continue;
    const denies = p.toolOverrides?.mcpToolsDeny;
    const one = forwardedServer(name, server, denies !== undefined && Object.hasOwn(denies, name) ? stringList(denies[name]) : []);
    if ("refused" in one) return one;
    servers.push(one.server);
  }
  return { servers };
}

// OpenClaw's own rule for an attempt's MCP servers: none when tools are off,
// and under an allowlist only when it may reach an MCP tool (a wildcard,
// the bundle's or plugins' group, or a <server>__<tool> name). Leaving them
// out narrows the turn; it never widens it.
function mayUseMcp(p: McpInput): boolean {
  if (p.disableTools === true) return false;
  if (p.toolsAllow === undefined) return true;
  return p.toolsAllow.some((t) => {
    const name = t.trim().toLowerCase();
    return name.includes("*") || name === "bundle-mcp" || name === "group:plugins" || name.includes("__");
  });
}

// A session's toggle wins over the server's own `enabled`.
function enabled(name: string, server: Record<string, unknown>, overrides: McpInput["toolOverrides"]): boolean {
  const toggles = overrides?.mcpServers;
  const toggle = toggles !== undefined && Object.hasOwn(toggles, name) ? toggles[name] : undefined;
  if (toggle !== undefined) return toggle;
  return server.enabled !== false;
}

function forwardedServer(
  name: string,
  server: Record<string, unknown>,
  sessionDenied: readonly string[],
): { server: wire.MCPServer } | Refused {
  const refuse = (field: string, why: string): Refused => ({ refused: refusal(name, field, why), server: name });
  if (!SERVER_NAME.test(name)) {
    return refuse("", "the cluster's Codex names its tools after the server, so its name must be 1 to 64 letters, digits, '_' or '-'");
  }
  if (server.command !== undefined || server.transport === "stdio") {
    return refuse(server.command !== undefined ? "command" : "transport", "a stdio server runs a process beside the gateway; the cluster's harnesses connect only to streamable-HTTP servers by url");
  }
  if (server.transport === "sse") return refuse("transport", "the cluster's Codex speaks only streamable HTTP, not SSE");
  if (typeof server.url !== "string" || server.url === "") return refuse("url", "is required: the cluster connects to the server by its url");
  if (isRecord(server.headers) && Object.keys(server.headers).length > 0) {
    return refuse("headers", "the dispatcher takes header values only from Secrets of the session's namespace, never from the gateway");
  }
  if (server.auth !== undefined || server.oauth !== undefined) {
    return refuse(server.auth !== undefined ? "auth" : "oauth", "the server's OAuth tokens stay in the gateway; the cluster has none to send");
  }
  if (server.sslVerify === false) return refuse("sslVerify", "the cluster's Codex always verifies the server's certificate");
  if (server.clientCert !== undefined || server.clientKey !== undefined) {
    return refuse(server.clientCert !== undefined ? "clientCert" : "clientKey", "the cluster's Codex presents no client certificate");
  }
  const codex = isRecord(server.codex) ? server.codex : {};
  if (codex.defaultToolsApprovalMode === "prompt") {
    return refuse("codex.defaultToolsApprovalMode", `"prompt" asks before every call; the cluster's Codex asks only by its own rule (tools without readOnlyHint, in a sandboxed thread)`);
  }
  const out: wire.MCPServer = { name, url: server.url };
  const filter = isRecord(server.toolFilter) ? server.toolFilter : {};
  const include = stringList(filter.include);
  const exclude = [...new Set([...stringList(filter.exclude), ...sessionDenied])].sort();
  for (const [field, list] of [["toolFilter.include", include], ["toolFilter.exclude", exclude]] as const) {
    const glob = list.find((t) => t.includes("*"));
    if (glob !== undefined) return refuse(field, `the pattern "${glob}": the cluster's Codex filters tools by exact name only`);
  }
  if (include.length > 0) out.enabledTools = include;
  if (exclude.length > 0) out.disabledTools = exclude;
  const startup = wholeMs(server.connectionTimeoutMs);
  if (startup !== undefined) out.startupTimeoutMs = startup;
  const perCall = wholeMs(server.requestTimeoutMs);
  if (perCall !== undefined) out.toolTimeoutMs = perCall;
  return { server: out };
}

function refusal(name: string, field: string, why: string): string {
  const where = `mcp.servers.${name}${field === "" ? "" : "." + field}`;
  return `harness-operator cannot offer the configured MCP server "${name}" on the cluster (${where}: ${why}), so the turn is not sent. ` +
    `To run without it, disable it for this session or in the config (mcp.servers.${name}.enabled: false).`;
}

function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === "string").map((s) => s.trim()).filter((s) => s !== "") : [];
}

// A positive timeout in whole milliseconds; anything else keeps Codex's default.
function wholeMs(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.ceil(v) : undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
