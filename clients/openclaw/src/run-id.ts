// The runId the plugin sends to the dispatcher for one attempt.
//
// OpenClaw's runId names a whole run (one inbound message), and OpenClaw
// calls runAttempt again under the same runId when it retries within the
// run: an empty reply is retried with the same prompt once and then with a
// "produce the visible answer now" nudge, a reasoning-only reply with a
// nudge, a compaction or a before_agent_finalize revision with another
// prompt, an auth or overload failure after rotating credentials or the
// think level. The dispatcher's runId is an idempotency key of one body:
// the same runId with another body is refused (RunIdConflict).
//
// So the dispatcher's runId is OpenClaw's runId plus a digest of the
// attempt's body: an attempt that repeats a body exactly (a reconnect, a
// gateway that re-sends the same attempt after a restart, OpenClaw's
// same-prompt retry when nothing else changed) maps to the same run, which
// the dispatcher replays instead of running twice; any other attempt gets a
// run of its own. OpenClaw's runId stays the prefix, so its logs and the
// cluster's runs still correlate.
import { createHash } from "node:crypto";

// The dispatcher's bound on a runId (wire.MaxRunIDLength, bytes).
const MAX_RUN_ID_BYTES = 128;
// 64 bits of SHA-256: distinct bodies of one run never meet in practice.
const DIGEST_HEX = 16;

/** The dispatcher's runId of an attempt: `<OpenClaw's runId>.<digest of the body without runId>`. */
export function dispatcherRunId(openclawRunId: string, body: object): string {
  const digest = sha256(canonicalJSON(body)).slice(0, DIGEST_HEX);
  // An OpenClaw runId too long to keep whole (OpenClaw's are UUIDs) is
  // replaced by its own digest, so the result stays within the bound.
  const prefix = Buffer.byteLength(openclawRunId) + 1 + DIGEST_HEX <= MAX_RUN_ID_BYTES ? openclawRunId : sha256(openclawRunId).slice(0, 32);
  return `${prefix}.${digest}`;
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

// JSON with every object's keys sorted: the digest is of the fields, not of
// the order OpenClaw or this plugin happened to build them in (the
// dispatcher compares bodies the same way). Array order is kept: it means
// something (tools, messages).
function canonicalJSON(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJSON(v === undefined ? null : v)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJSON(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
