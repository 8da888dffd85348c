// Each distinct supports() question and answer is logged once at debug
// level: the provider and model OpenClaw asked about, the route facts it
// prepared (ctx.modelProvider, as it handed them over), and what the plugin
// predicted. A gateway operator reads there why a model went to the cluster
// or not, and the real-OpenClaw test compares those facts with the ones the
// dispatcher's decision record shows (docs/openclaw-plugin.md).
import type { AgentHarnessSupport } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { SupportQuestion } from "./registry.js";

export type DebugLogger = { debug?(message: string): void };

// Enough for every model of a large config; past it the set starts over
// (a line logged twice is better than memory that grows without end).
const MAX_REMEMBERED = 256;

/** supports, logging each distinct question and answer once. */
export function loggedSupports(
  supports: (ctx: SupportQuestion) => AgentHarnessSupport,
  log: DebugLogger,
): (ctx: SupportQuestion) => AgentHarnessSupport {
  const seen = new Set<string>();
  return (ctx) => {
    const answer = supports(ctx);
    const debug = log.debug;
    if (debug === undefined) return answer;
    const line = supportLine(ctx, answer);
    if (!seen.has(line)) {
      if (seen.size >= MAX_REMEMBERED) seen.clear();
      seen.add(line);
      debug.call(log, line);
    }
    return answer;
  };
}

/** The log line; the route facts' JSON comes last so that it can be read back whole. */
export function supportLine(ctx: SupportQuestion, answer: AgentHarnessSupport): string {
  const verdict = answer.supported ? "supported" : answer.fallbackRuntime !== undefined ? `unsupported, fallbackRuntime ${answer.fallbackRuntime}` : "unsupported";
  const reason = answer.reason === undefined ? "" : ` (${answer.reason})`;
  const facts = ctx.modelProvider === undefined ? "none" : JSON.stringify(loggedFacts(ctx.modelProvider));
  return `harness-operator: supports ${ctx.provider}/${ctx.modelId ?? "*"}: ${verdict}${reason}; OpenClaw's route facts: ${facts}`;
}

type RouteFacts = NonNullable<SupportQuestion["modelProvider"]>;

// The secret-free facts, in OpenClaw's own order. `request` is left out: its
// values (proxy, TLS) are OpenClaw's opaque config and may hold credentials.
function loggedFacts(f: RouteFacts): Omit<RouteFacts, "request"> {
  const { request: _opaque, ...facts } = f;
  if (facts.baseUrl !== undefined) facts.baseUrl = maskedUrl(facts.baseUrl);
  return facts;
}

/**
 * An authored base URL may carry a credential in its user info or query (a
 * `?key=`): both are masked, as the dispatcher's decision record masks them
 * (internal/dispatcher/engine/records.go loggedRoute), and a URL that does not parse
 * is not shown.
 */
export function maskedUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "(unparseable, not shown)";
  }
  if (u.username !== "" || u.password !== "") {
    u.username = "redacted";
    u.password = "";
  }
  if (u.search !== "") u.search = "redacted";
  u.hash = "";
  return u.toString();
}
