import { test } from "node:test";
import assert from "node:assert/strict";

import { attemptMessages, type MessageParams } from "../src/attempt-messages.js";
import type * as wire from "../src/wire-shapes.js";

const params = {
  prompt: "What is the weather in Paris?\n\n[attachment note]", transcriptPrompt: "What is the weather in Paris?",
  provider: "openai", modelId: "gpt-5.5", model: { api: "openai-responses" },
} as unknown as MessageParams;

function turn(records: wire.TranscriptRecord[], result?: wire.TurnResult) {
  const transcript = records.map((record, i) => ({ record, atMs: 2000 + i }));
  return { startedAtMs: 1000, transcript, ...(result === undefined ? {} : { result }) };
}

const prompt: wire.TranscriptRecord = { type: "message", role: "user", text: "What is the weather in Paris?\n\n[attachment note]" };
const ok: wire.TurnResult = { terminal: { kind: "ok" } };

test("the user message is the prompt OpenClaw recorded, with its images, timed when the turn began", () => {
  const { messagesSnapshot } = attemptMessages(params, turn([prompt]));
  assert.deepEqual(messagesSnapshot, [{ role: "user", content: "What is the weather in Paris?", timestamp: 1000 }]);
  const image = { type: "image", data: "AAAA", mimeType: "image/png" };
  const withImage = attemptMessages({ ...params, images: [image] } as MessageParams, turn([prompt]));
  assert.deepEqual(withImage.messagesSnapshot[0], {
    role: "user", content: [{ type: "text", text: "What is the weather in Paris?" }, image], timestamp: 1000,
  });
});

test("the gateway's own messages and the runtime's copy of the prompt are not repeated", () => {
  const { messagesSnapshot } = attemptMessages(params, turn([
    { type: "message", role: "user", text: "capital of Peru?", gateway: true },
    { type: "message", role: "assistant", text: "Lima.", gateway: true },
    prompt,
  ]));
  assert.deepEqual(messagesSnapshot.map((m) => m.role), ["user"]);
});

test("calls made together are one assistant message, each result a toolResult message, native tools included", () => {
  const { messagesSnapshot } = attemptMessages(params, turn([
    prompt,
    { type: "tool_call", role: "assistant", callId: "call_1", tool: "get_weather", arguments: { city: "Paris" } },
    { type: "tool_call", role: "assistant", callId: "call_2", tool: "exec", arguments: { command: "date" }, native: true },
    { type: "tool_result", role: "tool", callId: "call_1", tool: "get_weather", text: "18°C" },
    { type: "tool_result", role: "tool", callId: "call_2", tool: "exec", text: "", isError: true, native: true },
  ], ok));
  assert.equal(messagesSnapshot.length, 4);
  const [, calls, first, second] = messagesSnapshot;
  assert.ok(calls?.role === "assistant");
  assert.deepEqual(calls.content, [
    { type: "toolCall", id: "call_1", name: "get_weather", arguments: { city: "Paris" } },
    { type: "toolCall", id: "call_2", name: "exec", arguments: { command: "date" } },
  ]);
  assert.equal(calls.stopReason, "toolUse");
  assert.deepEqual([calls.api, calls.provider, calls.model, calls.timestamp], ["openai-responses", "openai", "gpt-5.5", 2001]);
  assert.deepEqual(first, { role: "toolResult", toolCallId: "call_1", toolName: "get_weather", content: [{ type: "text", text: "18°C" }], isError: false, timestamp: 2003 });
  assert.deepEqual(second, { role: "toolResult", toolCallId: "call_2", toolName: "exec", content: [], isError: true, timestamp: 2004 });
});

test("lastAssistant is the turn's last message with text, finished as the turn ended, and absent when the turn said nothing", () => {
  const answered: wire.TranscriptRecord[] = [
    prompt,
    { type: "message", role: "assistant", text: "Let me look." },
    { type: "tool_call", role: "assistant", callId: "call_1", tool: "get_weather", arguments: { city: "Paris" } },
    { type: "tool_result", role: "tool", callId: "call_1", tool: "get_weather", text: "18°C" },
    { type: "message", role: "assistant", text: "18°C in Paris." },
  ];
  const cases: Array<{ name: string; records: wire.TranscriptRecord[]; result?: wire.TurnResult; want: { text: string; stopReason: string; errorMessage?: string } | undefined }> = [
    { name: "ok", records: answered, result: ok, want: { text: "18°C in Paris.", stopReason: "stop" } },
    { name: "interrupted", records: answered, result: { terminal: { kind: "aborted", message: "the turn was interrupted" } }, want: { text: "18°C in Paris.", stopReason: "aborted" } },
    { name: "timed out", records: answered, result: { terminal: { kind: "timeout" } }, want: { text: "18°C in Paris.", stopReason: "aborted" } },
    { name: "failed", records: answered, result: { terminal: { kind: "failed", message: "model error" } }, want: { text: "18°C in Paris.", stopReason: "error", errorMessage: "model error" } },
    { name: "stream ended without a result", records: answered, want: { text: "18°C in Paris.", stopReason: "error" } },
    { name: "only tool calls", records: answered.slice(0, 1).concat(answered.slice(2, 4)), result: ok, want: undefined },
    { name: "empty reply", records: [prompt, { type: "message", role: "assistant", text: "" }], result: ok, want: undefined },
  ];
  for (const c of cases) {
    const { messagesSnapshot, lastAssistant } = attemptMessages(params, turn(c.records, c.result));
    if (c.want === undefined) {
      assert.equal(lastAssistant, undefined, c.name);
      continue;
    }
    assert.equal(lastAssistant, messagesSnapshot.at(-1), c.name);
    assert.deepEqual(lastAssistant?.content, [{ type: "text", text: c.want.text }], c.name);
    assert.equal(lastAssistant?.stopReason, c.want.stopReason, c.name);
    assert.equal(lastAssistant?.errorMessage, c.want.errorMessage, c.name);
  }
});

test("the turn's usage goes on the answer once, the other messages carry none, and cost stays zero: the cluster reports none", () => {
  const { messagesSnapshot, lastAssistant } = attemptMessages(params, turn([
    prompt,
    { type: "tool_call", role: "assistant", callId: "call_1", tool: "get_weather", arguments: { city: "Paris" } },
    { type: "tool_result", role: "tool", callId: "call_1", tool: "get_weather", text: "18°C" },
    { type: "message", role: "assistant", text: "18°C in Paris." },
  ], { terminal: { kind: "ok" }, usage: { input: 20, cachedInput: 4, output: 10, reasoning: 2, total: 34 } }));
  const calls = messagesSnapshot[1];
  assert.ok(calls?.role === "assistant");
  assert.equal(calls.usage.totalTokens, 0);
  assert.deepEqual(lastAssistant?.usage, {
    input: 20, output: 10, cacheRead: 4, cacheWrite: 0, totalTokens: 34,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }, contextUsage: { state: "unavailable" },
  });
});
