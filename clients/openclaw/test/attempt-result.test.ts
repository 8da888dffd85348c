import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentHarnessPreflightError, type AgentHarnessAttemptResult } from "openclaw/plugin-sdk/agent-harness-runtime";

import { attemptResult } from "../src/attempt-result.js";
import { DispatcherError } from "../src/dispatcher-error.js";
import { TurnProjection } from "../src/events.js";

const ctx = { sessionId: "s-1", harnessId: "harness-operator", abortedByHost: false };

async function projection(events: Array<[string, unknown]>): Promise<TurnProjection> {
  const p = new TurnProjection({});
  let id = 0;
  for (const [event, data] of events) await p.apply({ id: String(++id), event, data: JSON.stringify(data) });
  return p;
}

test("a finished turn returns its texts, usage and this plugin's harness id as the seed's attempt result", async () => {
  const p = await projection([
    ["result", {
      runId: "gw-demo-0001", assistantTexts: ["Hello from stub"], terminal: { kind: "ok" },
      usage: { input: 10, cachedInput: 0, output: 5, reasoning: 0, total: 15 }, agentHarnessId: "codex",
    }],
  ]);
  // Typed as the SDK's result: the shape is checked against the host's types.
  const r: AgentHarnessAttemptResult = attemptResult(p, ctx);
  assert.deepEqual(r.terminal, { kind: "ok" });
  assert.deepEqual(r.assistantTexts, ["Hello from stub"]);
  assert.equal(r.agentHarnessId, "harness-operator");
  assert.equal(r.sessionIdUsed, "s-1");
  assert.deepEqual(r.attemptUsage, { input: 10, output: 5, cacheRead: 0, reasoningTokens: 0, total: 15 });
  assert.deepEqual(r.replayMetadata, { hadPotentialSideEffects: false, replaySafe: true });
});

test("each terminal kind of the dispatcher becomes OpenClaw's terminal", async () => {
  const kinds: Array<[unknown, boolean, unknown]> = [
    [{ kind: "aborted", message: "the turn was interrupted" }, false, { kind: "aborted", source: "runtime" }],
    [{ kind: "aborted" }, true, { kind: "aborted", source: "external" }],
    [{ kind: "timeout" }, false, { kind: "timeout", phase: "prompt", source: "runtime" }],
  ];
  for (const [terminal, abortedByHost, want] of kinds) {
    const r = attemptResult(await projection([["result", { terminal }]]), { ...ctx, abortedByHost });
    assert.deepEqual(r.terminal, want);
  }
  const failed = attemptResult(await projection([["result", { terminal: { kind: "failed", message: "model error" } }]]), ctx);
  assert.equal(failed.terminal.kind, "failed");
  assert.match(String((failed.terminal as { error: Error }).error.message), /model error/);
});

test("a claimed turn's stream error is a failed terminal that is not replay-safe, never a preflight error", async () => {
  const r = attemptResult(await projection([
    ["selected", { runId: "r" }],
    ["error", { code: "HarnessUnavailable", message: "the server went away", scope: "harness", retryable: true, replaySafe: false }],
  ]), ctx);
  assert.equal(r.terminal.kind, "failed");
  const error = (r.terminal as { error: unknown }).error;
  assert.ok(error instanceof DispatcherError && !(error instanceof AgentHarnessPreflightError));
  assert.deepEqual(r.replayMetadata, { hadPotentialSideEffects: true, replaySafe: false });
});

test("a stream that ended without the turn's outcome is a failure that may have run", async () => {
  const r = attemptResult(await projection([["selected", { runId: "r" }], ["partial", { itemId: "m", delta: "hal" }]]), ctx);
  assert.equal(r.terminal.kind, "failed");
  assert.equal(r.replayMetadata.replaySafe, false);
});

test("the dispatcher's lastToolError is kept when the host reported none", async () => {
  const r = attemptResult(await projection([
    ["result", {
      terminal: { kind: "aborted" },
      lastToolError: { callId: "call_3", tool: "get_weather", executionStarted: true, reason: "cancelled", message: "ended", mutatingAction: true },
    }],
  ]), ctx);
  assert.deepEqual(r.lastToolError, { toolName: "get_weather", executionStarted: true, error: "ended", errorCode: "cancelled", mutatingAction: true });
});

test("an attempt OpenClaw aborted before the turn's result is aborted from outside, and may have run", async () => {
  const r = attemptResult(await projection([["selected", { runId: "r" }]]), { ...ctx, abortedByHost: true });
  assert.deepEqual(r.terminal, { kind: "aborted", source: "external" });
  assert.equal(r.replayMetadata.replaySafe, false);
});
