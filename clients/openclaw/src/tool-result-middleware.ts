// OpenClaw's tool-result middleware (api.registerAgentToolResultMiddleware)
// on cluster turns. The cluster runs Codex, so the middleware that concerns
// its turns is the one registered for runtime "codex", the runtime OpenClaw's
// own Codex harness applies:
//   - host tools run in the gateway's tool surface (tools.ts): their results
//     go through that middleware before they are posted to the dispatcher,
//     with OpenClaw's own runner (createAgentToolResultMiddlewareRunner);
//   - native tools (exec, apply_patch, web search, MCP, …) run inside the
//     cluster's Codex, which hands their output to the model directly: no
//     middleware can run on it. An attempt for which a "codex" middleware
//     covers a native tool is refused before its turn is sent, naming the
//     middleware's plugin, rather than run with the middleware bypassed.
//
// The SDK has no call that lists the registered middleware. OpenClaw keeps
// its active plugin registry in process-global state
// (Symbol.for("openclaw.pluginRegistryState"), `activeRegistry`): the same
// registry its runner reads its middleware from. That state is read here with
// strict shape checks; state whose shape is not recognised refuses the
// attempt, saying so.
import {
  type AgentHarnessAttemptParamsV2,
  AgentHarnessPreflightError,
  type AgentToolResultMiddleware,
  type AgentToolResultMiddlewareContext,
  type AgentToolResultMiddlewareEvent,
  createAgentToolResultMiddlewareRunner,
  type OpenClawAgentToolResult,
} from "openclaw/plugin-sdk/agent-harness-runtime";

import { NativeToolIds } from "./wire.js";

/** The middleware runtime of cluster turns: the cluster's harness is Codex. */
export const CLUSTER_MIDDLEWARE_RUNTIME = "codex";

/**
 * The tools Codex runs natively on the cluster, as a middleware matcher
 * names them: the wire package's NativeTool* constants (the names the
 * dispatcher's stream reports for native tools, and the names OpenClaw's
 * own Codex harness gives Codex's other native tools). A native MCP tool
 * is reported as `<server>__<tool>`: any matcher entry of that shape counts
 * as native too (nativeMcpShaped).
 */
const NATIVE_TOOL_IDS: ReadonlySet<string> = new Set(NativeToolIds);

const REGISTRY_STATE = Symbol.for("openclaw.pluginRegistryState");

/** What runs a host tool's result through the attempt's middleware. */
export type HostToolMiddleware = {
  apply(event: AgentToolResultMiddlewareEvent): Promise<OpenClawAgentToolResult>;
};

/**
 * OpenClaw's runner for the attempt's host-tool results: every middleware
 * registered for runtime "codex" whose matcher covers the tool, in
 * registration order, loaded once per attempt from the active registry
 * (handlers, when given, instead). It returns the result unchanged when
 * none applies, and a placeholder, never the raw output, when one fails.
 */
export function hostToolMiddleware(
  p: Partial<Pick<AgentHarnessAttemptParamsV2, "agentId" | "sessionId" | "sessionKey" | "runId">>,
  handlers?: AgentToolResultMiddleware[],
): HostToolMiddleware {
  const ctx: AgentToolResultMiddlewareContext = { runtime: CLUSTER_MIDDLEWARE_RUNTIME };
  if (p.agentId !== undefined) ctx.agentId = p.agentId;
  if (p.sessionId !== undefined) ctx.sessionId = p.sessionId;
  if (p.sessionKey !== undefined) ctx.sessionKey = p.sessionKey;
  if (p.runId !== undefined) ctx.runId = p.runId;
  const runner = createAgentToolResultMiddlewareRunner(ctx, handlers);
  return { apply: (event) => runner.applyToolResultMiddleware(event) };
}

/** One scope of a middleware registered for runtime "codex": matcher absent means every tool. */
export type CodexScope = { pluginId: string; matcher?: readonly string[] };

/** The "codex" middleware OpenClaw's active registry holds, or why it could not be read. */
export type RegisteredMiddleware =
  | { scopes: CodexScope[]; unloadedOwners: string[] }
  | { unreadable: string };

/** The process's plugin registry state, as OpenClaw keeps it. */
export function registryState(): unknown {
  return (globalThis as Record<symbol, unknown>)[REGISTRY_STATE];
}

/**
 * Reads the "codex" middleware of OpenClaw's registry state (registryState):
 * each registration's scopes (runtimes and matcher, as OpenClaw keeps them
 * per registration), and the plugins that declare "codex" middleware
 * (`contracts.agentToolResultMiddleware`) but have no registration loaded,
 * whose matchers are therefore unknown. No active registry means no
 * middleware, as for OpenClaw's runner. Any other shape is unreadable.
 */
export function readRegisteredMiddleware(state: unknown): RegisteredMiddleware {
  if (!isRecord(state) || !("activeRegistry" in state)) {
    return { unreadable: "OpenClaw's plugin registry state is missing or not an object" };
  }
  const registry = state["activeRegistry"];
  if (registry === null || registry === undefined) return { scopes: [], unloadedOwners: [] };
  if (!isRecord(registry)) return { unreadable: "activeRegistry is not an object" };
  const registrations = registry["agentToolResultMiddlewares"];
  const owners = registry["agentToolResultMiddlewareOwners"];
  if (!Array.isArray(registrations)) return { unreadable: "activeRegistry.agentToolResultMiddlewares is not an array" };
  if (!Array.isArray(owners)) return { unreadable: "activeRegistry.agentToolResultMiddlewareOwners is not an array" };

  const scopes: CodexScope[] = [];
  const loaded = new Set<string>();
  for (const [i, r] of registrations.entries()) {
    const where = `activeRegistry.agentToolResultMiddlewares[${i}]`;
    const pluginId = isRecord(r) ? r["pluginId"] : undefined;
    const runtimes = isRecord(r) ? r["runtimes"] : undefined;
    if (!isRecord(r) || !nonEmptyString(pluginId)) return { unreadable: `${where}.pluginId is not a plugin id` };
    if (!isStringArray(runtimes)) return { unreadable: `${where}.runtimes is not a list of runtime ids` };
    if (runtimes.includes(CLUSTER_MIDDLEWARE_RUNTIME)) loaded.add(pluginId);
    const raw = r["scopes"];
    // OpenClaw's own reading: no scopes is one scope of the registration's runtimes, every tool.
    let list: unknown[];
    if (raw === undefined) list = [{ runtimes }];
    else if (Array.isArray(raw)) list = raw.length > 0 ? raw : [{ runtimes }];
    else return { unreadable: `${where}.scopes is not an array` };
    for (const [j, s] of list.entries()) {
      const scopeRuntimes = isRecord(s) ? s["runtimes"] : undefined;
      if (!isRecord(s) || !isStringArray(scopeRuntimes)) return { unreadable: `${where}.scopes[${j}].runtimes is not a list of runtime ids` };
      const matcher = s["matcher"];
      if (matcher !== undefined && (!isStringArray(matcher) || matcher.length === 0 || !matcher.every(nonEmptyString))) {
        return { unreadable: `${where}.scopes[${j}].matcher is not a list of tool names` };
      }
      if (!scopeRuntimes.includes(CLUSTER_MIDDLEWARE_RUNTIME)) continue;
      scopes.push(matcher === undefined ? { pluginId } : { pluginId, matcher: matcher.map((m) => m.trim().toLowerCase()) });
    }
  }
  const unloadedOwners: string[] = [];
  for (const [i, o] of owners.entries()) {
    const where = `activeRegistry.agentToolResultMiddlewareOwners[${i}]`;
    const id = isRecord(o) ? o["pluginId"] : undefined;
    const ownerRuntimes = isRecord(o) ? o["runtimes"] : undefined;
    if (!nonEmptyString(id)) return { unreadable: `${where}.pluginId is not a plugin id` };
    if (!isStringArray(ownerRuntimes)) return { unreadable: `${where}.runtimes is not a list of runtime ids` };
    if (ownerRuntimes.includes(CLUSTER_MIDDLEWARE_RUNTIME) && !loaded.has(id) && !unloadedOwners.includes(id)) unloadedOwners.push(id);
  }
  return { scopes, unloadedOwners };
}

/** A matcher entry naming a native MCP tool's shape (`<server>__<tool>`). */
export function nativeMcpShaped(name: string): boolean {
  const at = name.indexOf("__");
  return at > 0 && at < name.length - 2;
}

/**
 * Why the registered middleware cannot be honoured on the cluster, one
 * reason per plugin, or none: a middleware without a matcher covers every
 * tool; a matcher naming a native tool covers it; a plugin whose middleware
 * is not loaded, or state that could not be read, cannot be shown to cover
 * none. A middleware whose matcher names only host tools refuses nothing.
 */
export function nativeCoverage(reg: RegisteredMiddleware): string[] {
  if ("unreadable" in reg) {
    return [`OpenClaw's registered tool-result middleware could not be read (${reg.unreadable}), so whether one covers a native tool is unknown`];
  }
  const covered = new Map<string, Set<string>>();
  const add = (pluginId: string, what: string): void => {
    const s = covered.get(pluginId) ?? new Set<string>();
    s.add(what);
    covered.set(pluginId, s);
  };
  for (const s of reg.scopes) {
    if (s.matcher === undefined) {
      add(s.pluginId, "every tool (no matcher)");
      continue;
    }
    for (const name of s.matcher) {
      if (NATIVE_TOOL_IDS.has(name)) add(s.pluginId, name);
      else if (nativeMcpShaped(name)) add(s.pluginId, `${name} (an MCP tool's name)`);
    }
  }
  const reasons = [...covered].map(([pluginId, what]) =>
    `the tool-result middleware of plugin ${JSON.stringify(pluginId)} covers ${[...what].join(", ")}, and Codex hands a native tool's output to the model directly, without it`);
  for (const pluginId of reg.unloadedOwners) {
    reasons.push(`plugin ${JSON.stringify(pluginId)} declares tool-result middleware for runtime codex, but none of it is loaded in OpenClaw's active plugin registry, so which tools it covers is unknown`);
  }
  return reasons;
}

/**
 * Fails the attempt, before its turn is sent, when a "codex" tool-result
 * middleware covers a tool Codex runs natively on the cluster: a preflight
 * error without scope, so that OpenClaw's fallback chain ends rather than
 * the turn running elsewhere behind the gateway operator's back.
 */
export function assertNoNativeMiddleware(state: unknown = registryState()): void {
  const reasons = nativeCoverage(readRegisteredMiddleware(state));
  if (reasons.length === 0) return;
  throw new AgentHarnessPreflightError(
    `harness-operator refuses the turn: ${reasons.join("; ")}. Give the middleware a matcher that names only OpenClaw's own tools, or run its agents on another runtime`,
    { userMessage: "A tool-result middleware of this gateway covers tools the cluster's agent harness runs natively, where it cannot run." },
  );
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((e) => typeof e === "string");
}

function nonEmptyString(v: unknown): v is string {
  return typeof v === "string" && v.trim() !== "";
}
