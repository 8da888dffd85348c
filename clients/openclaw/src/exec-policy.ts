// Which approval mode the cluster's runtime gets, from OpenClaw's exec
// policy for the attempt. The dispatcher offers two modes this plugin uses:
// `never` (the runtime runs every command without asking) and `untrusted`
// (the runtime asks about every command it does not itself consider safe;
// what it asks goes through the attempt's runBeforeToolCall). Neither asks
// about every command, and OpenClaw's command allowlist is matched by
// OpenClaw's own exec tool, not by runBeforeToolCall. So a policy that
// lets only allowlisted commands run, asks about every command, or denies
// commands cannot be held on the cluster: `untrusted` would run the
// runtime's own safe commands (ls, cat, …) unasked and unmatched. Such an
// attempt is refused before anything is sent. OpenClaw's own Codex harness
// likewise blocks native execution under the deny and allowlist modes.
//
// The effective policy is resolved the way OpenClaw resolves it for its own
// Codex harness: `permissionMode: "full"` wins; otherwise tools.exec of the
// config, then the agent's tools.exec, then the attempt's execOverrides,
// each a mode or a security/ask pair over the layer before, starting from
// full/off (OpenClaw's default for gateway hosts). The host-local approvals
// file is not read.
import { type AgentHarnessAttemptParamsV2, AgentHarnessPreflightError, execPolicy } from "openclaw/plugin-sdk/agent-harness-runtime";
import { resolveAgentConfig } from "openclaw/plugin-sdk/agent-scope-runtime";

export type ExecPolicyInput = Pick<AgentHarnessAttemptParamsV2, "permissionMode" | "config" | "agentId" | "execOverrides">;

type Policy = ReturnType<typeof execPolicy.resolveExecModePolicy>;
type Mode = Policy["mode"];
type Security = Policy["security"];
type Ask = Policy["ask"];

const MODES: readonly string[] = ["deny", "allowlist", "ask", "auto", "full"];
const SECURITIES: readonly string[] = ["deny", "allowlist", "full"];
const ASKS: readonly string[] = ["off", "on-miss", "always"];

/**
 * OpenClaw's exec policy for the attempt: its mode and its security/ask
 * pair. A setting this plugin does not know is an error naming it: a
 * policy it cannot read is not taken for a permissive one.
 */
export function effectiveExecPolicy(p: ExecPolicyInput): Policy {
  const full = execPolicy.resolveExecModePolicy({ mode: "full", security: "full", ask: "off" });
  if (p.permissionMode === "full") return full;
  const config = p.config;
  let policy = layer(full, record(record(config?.tools)?.["exec"]), "tools.exec");
  const agentId = p.agentId?.trim();
  if (config !== undefined && agentId !== undefined && agentId !== "") {
    policy = layer(policy, record(record(resolveAgentConfig(config, agentId)?.tools)?.["exec"]), `the agent ${JSON.stringify(agentId)}'s tools.exec`);
  }
  return layer(policy, record(p.execOverrides), "execOverrides");
}

/** The approval mode for the attempt, or why the cluster cannot hold its exec policy. */
export function nativeApprovalMode(p: ExecPolicyInput): { approvalMode: "never" | "untrusted" } | { refused: string } {
  let policy: Policy;
  try {
    policy = effectiveExecPolicy(p);
  } catch (err) {
    return { refused: `harness-operator: OpenClaw's exec policy for this attempt cannot be read, so nothing was sent: ${(err as Error).message}` };
  }
  if (policy.security !== "full" || policy.ask === "always") {
    return {
      refused:
        `harness-operator: OpenClaw's exec policy for this attempt is "${policy.mode}" (security ${policy.security}, ask ${policy.ask}), ` +
        `which the cluster's runtime cannot be held to: it runs the commands it considers safe without asking, and OpenClaw's allowlist never sees them. ` +
        `Nothing was sent. Run this agent's turns on the cluster with tools.exec.mode "full" (commands the runtime does not consider safe are still asked about), or on another runtime.`,
    };
  }
  // Unattended only when this attempt's own settings say so; a configured
  // full policy still has the runtime ask, so OpenClaw's hooks see the
  // commands it does not consider safe.
  const o = record(p.execOverrides);
  const unattended = p.permissionMode === "full" || o?.["ask"] === "off" || o?.["mode"] === "full";
  return { approvalMode: unattended ? "never" : "untrusted" };
}

/**
 * Fails an attempt whose exec policy the cluster cannot hold, before
 * anything is written or sent: a preflight error without scope, so that
 * OpenClaw's fallback chain ends instead of running the turn elsewhere.
 */
export function assertExecPolicyHeld(p: ExecPolicyInput): void {
  const mode = nativeApprovalMode(p);
  if ("refused" in mode) {
    throw new AgentHarnessPreflightError(mode.refused, { userMessage: "This agent's exec policy cannot be enforced on the cluster's agent harness." });
  }
}

// One layer of exec settings over the policy below it: a mode replaces it;
// security and ask replace their half.
function layer(base: Policy, exec: Record<string, unknown> | undefined, where: string): Policy {
  if (exec === undefined) return base;
  const mode = setting(exec, "mode", MODES, where) as Mode | undefined;
  if (mode !== undefined) return execPolicy.resolveExecModePolicy({ mode, security: base.security, ask: base.ask });
  const security = setting(exec, "security", SECURITIES, where) as Security | undefined;
  const ask = setting(exec, "ask", ASKS, where) as Ask | undefined;
  if (security === undefined && ask === undefined) return base;
  return execPolicy.resolveExecModePolicy({ security: security ?? base.security, ask: ask ?? base.ask });
}

// A setting as OpenClaw reads it (trimmed, lower case); absent when unset.
function setting(exec: Record<string, unknown>, name: string, known: readonly string[], where: string): string | undefined {
  const value = exec[name];
  if (value === undefined || value === null || value === "") return undefined;
  const normalized = typeof value === "string" ? value.trim().toLowerCase() : undefined;
  if (normalized === undefined || !known.includes(normalized)) {
    throw new Error(`${where}.${name}: ${JSON.stringify(value)} is none of ${known.join(", ")}`);
  }
  return normalized;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}
