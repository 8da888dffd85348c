import { test } from "node:test";
import assert from "node:assert/strict";

import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import { createHarness } from "../src/harness.js";
import { fakeHost } from "./host.js";
import { jsonError, sse, startLoopback } from "./loopback.js";

const NUDGE = "The previous attempt did not produce a user-visible answer. Continue from the current state and produce the visible answer now. Do not restart from scratch.";

function params(prompt: string): AgentHarnessAttemptParamsV2 {
  return {
    runId: "0fc40a58-bddf-40bf-82f8-64fcbb8e841e", sessionId: "demo-1", sessionKey: "agent:main:demo", agentId: "main",
    provider: "openai", modelId: "gpt-5.5", model: { api: "openai-responses" }, prompt, thinkLevel: "off", timeoutMs: 60000,
    hostCapabilities: fakeHost().caps,
  } as unknown as AgentHarnessAttemptParamsV2;
}

// OpenClaw's retries of an attempt that said nothing (its embedded runner):
// the same runId, first with the same prompt, then with a nudge. Against a
// dispatcher that keeps a runId to one body, as the real one does.
test("OpenClaw's retries of an empty reply under the same runId reach the cluster as runs of their own; a repeat of the same body is replayed", { timeout: 30_000 }, async () => {
  const runs = new Map<string, string>();
  let started = 0;
  const lb = await startLoopback((req, res) => {
    const { runId, ...rest } = JSON.parse(req.body) as { runId: string; prompt: string };
    const body = JSON.stringify(rest);
    const known = runs.get(runId);
    if (known !== undefined && known !== body) {
      jsonError(res, 409, { code: "RunIdConflict", message: `runId "${runId}" of AgentSession agents/demo-1 was used for a different request`, scope: "", retryable: false });
      return;
    }
    if (known === undefined) {
      runs.set(runId, body);
      started++;
    }
    const text = rest.prompt === NUDGE ? "Hello." : "";
    sse(res, [
      [1, "selected", { runId, turnToken: "tt" }],
      [2, "transcript", { type: "message", role: "user", text: rest.prompt }],
      ...(text === "" ? [] : [[3, "transcript", { type: "message", role: "assistant", text }] as [number, string, unknown]]),
      [4, "result", { runId, assistantTexts: text === "" ? [] : [text], terminal: { kind: "ok" }, ...(text === "" ? { classification: "empty" } : {}) }],
    ], runId);
  });
  try {
    const harness = createHarness(lb.config);
    const first = await harness.runAttempt(params("Say hi"));
    assert.equal(first.lastAssistant, undefined, "nothing said: OpenClaw retries");
    const same = await harness.runAttempt(params("Say hi"));
    assert.deepEqual(same.assistantTexts, []);
    const nudged = await harness.runAttempt(params(NUDGE));
    assert.deepEqual(nudged.assistantTexts, ["Hello."]);
    assert.equal(nudged.lastAssistant?.content[0]?.type, "text");
    const sent = lb.requests.map((r) => (JSON.parse(r.body) as { runId: string }).runId);
    assert.equal(sent[1], sent[0], "the same body is the same run");
    assert.notEqual(sent[2], sent[0], "the nudge is a run of its own");
    assert.equal(started, 2, "the dispatcher ran two turns: the same body was replayed, not run again");
  } finally {
    await lb.close();
  }
});

test("OpenClaw's agent_end hook gets the turn's messages: the prompt and the answer", { timeout: 30_000 }, async () => {
  const lb = await startLoopback((req, res) => {
    const { runId } = JSON.parse(req.body) as { runId: string };
    sse(res, [
      [1, "selected", { runId, turnToken: "tt" }],
      [2, "transcript", { type: "message", role: "user", text: "Say hi" }],
      [3, "transcript", { type: "message", role: "assistant", text: "Hi." }],
      [4, "result", { runId, assistantTexts: ["Hi."], terminal: { kind: "ok" } }],
    ], runId);
  });
  try {
    const ends: Array<{ event: { messages: unknown[] } }> = [];
    const harness = createHarness(lb.config, { agentEnd: (p) => void ends.push(p) });
    const result = await harness.runAttempt(params("Say hi"));
    assert.equal(ends.length, 1);
    assert.ok("terminal" in result);
    assert.equal(ends[0]?.event.messages, result.messagesSnapshot, "the result's own snapshot");
    assert.deepEqual(result.messagesSnapshot.map((m) => m.role), ["user", "assistant"]);
  } finally {
    await lb.close();
  }
});
