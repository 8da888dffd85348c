import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentHarnessPreflightError, type AgentHarnessAttemptResult } from "openclaw/plugin-sdk/agent-harness-runtime";

import { attemptResult, type ResultContext } from "../src/attempt-result.js";
import { DispatcherError } from "../src/dispatcher-error.js";
import { TurnProjection } from "../src/events.js";

const params = {
  sessionId: "s-1", prompt: "Say hello", provider: "openai", modelId: "gpt-5.5", model: { api: "openai-responses" },
} as unknown as ResultContext["params"];
const ctx = { params, harnessId: "harness-operator", abortedByHost: false };

async function projection(events: Array<[string, unknown]>): Promise<TurnProjection> {
  const p = new TurnProjection({});
  let id = 0;
  for (const [event, data] of events) await p.apply({ id: String(++id), event, data: JSON.stringify(data) });
  return p;
}

test("a finished turn returns its texts, usage and this plugin's harness id as the harness SDK's attempt result", async () => {
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

test("the result's messages are the turn's: OpenClaw's prompt, the tool exchange the stream showed and the answer as lastAssistant", async () => {
  const r = attemptResult(await projection([
    ["selected", { runId: "r" }],
    ["transcript", { type: "message", role: "user", text: "Say hello" }],
    ["transcript", { type: "tool_call", role: "assistant", callId: "call_3", tool: "get_weather", arguments: { city: "Paris" } }],
    ["transcript", { type: "tool_result", role: "tool", callId: "call_3", tool: "get_weather", text: "18°C" }],
    ["transcript", { type: "message", role: "assistant", text: "got 18°C" }],
    ["result", { assistantTexts: ["got 18°C"], terminal: { kind: "ok" }, usage: { input: 20, cachedInput: 4, output: 10, total: 34 } }],
  ]), ctx);
  assert.deepEqual(r.messagesSnapshot.map((m) => m.role), ["user", "assistant", "toolResult", "assistant"]);
  assert.equal(r.lastAssistant, r.messagesSnapshot[3], "the answer is the snapshot's own message");
  assert.deepEqual(r.lastAssistant?.content, [{ type: "text", text: "got 18°C" }]);
  assert.equal(r.lastAssistant?.stopReason, "stop");
  assert.deepEqual([r.lastAssistant?.usage.input, r.lastAssistant?.usage.cacheRead, r.lastAssistant?.usage.output, r.lastAssistant?.usage.totalTokens], [20, 4, 10, 34]);
});

test("a turn that said nothing has no lastAssistant, and its snapshot is OpenClaw's prompt alone", async () => {
  const r = attemptResult(await projection([
    ["selected", { runId: "r" }],
    ["transcript", { type: "message", role: "user", text: "Say hello" }],
    ["result", { assistantTexts: [], terminal: { kind: "ok" }, classification: "empty" }],
  ]), ctx);
  assert.equal(r.lastAssistant, undefined);
  assert.deepEqual(r.messagesSnapshot.map((m) => m.role), ["user"]);
  assert.equal(r.agentHarnessResultClassification, "empty");
});

test("the attested runtime artifact the turn captured is the result's runtimeArtifact", async () => {
  const r = attemptResult(await projection([
    ["result", { terminal: { kind: "ok" }, runtimeArtifact: { id: "ghcr.io/x/codex@sha256:ab#0.169.0", fingerprint: "sha256:ab" } }],
  ]), ctx);
  assert.deepEqual(r.runtimeArtifact, { id: "ghcr.io/x/codex@sha256:ab#0.169.0", fingerprint: "sha256:ab" });
  const none = attemptResult(await projection([["result", { terminal: { kind: "ok" } }]]), ctx);
  assert.equal("runtimeArtifact" in none, false, "a turn that captured none reports none");
});
