import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentHarnessPreflightError, type AgentHarnessAttemptResult, type AgentMessage } from "openclaw/plugin-sdk/agent-harness-runtime";

import { attemptResult, type ResultContext } from "../src/attempt-result.js";
import { CompletionAnswerError } from "../src/completion-answer.js";
import { TurnProjection } from "../src/events.js";
import { createHarness } from "../src/harness.js";
import { FINALIZATION_INSTRUCTIONS, type FinalizeParams, settledContext, wireMessages } from "../src/settled-finalization.js";
import { jsonError, startLoopback } from "./loopback.js";

type Result = Extract<AgentHarnessAttemptResult, { terminal: unknown }>;

const params = {
  sessionId: "Weather:1", prompt: "What is the weather in Paris?", provider: "openai", modelId: "gpt-5.5", model: { api: "openai-responses" },
} as unknown as ResultContext["params"];
const ctx = { params, harnessId: "harness-operator", abortedByHost: false };

async function settledTurn(events: Array<[string, unknown]>): Promise<Result> {
  const p = new TurnProjection({});
  let id = 0;
  for (const [event, data] of events) await p.apply({ id: String(++id), event, data: JSON.stringify(data) });
  return attemptResult(p, ctx);
}

// The turn OpenClaw finalizes: a tool ran, its result came back, and the
// native turn ended without an answer.
const toolTurnWithoutAnswer: Array<[string, unknown]> = [
  ["selected", { runId: "gw-weather-0001.abc", turnToken: "tt" }],
  ["transcript", { type: "message", role: "user", text: "What is the weather in Paris?" }],
  ["transcript", { type: "tool_call", role: "assistant", callId: "call_3", tool: "get_weather", arguments: { city: "Paris" } }],
  ["transcript", { type: "tool_result", role: "tool", callId: "call_3", tool: "get_weather", text: "18°C" }],
  ["result", { runId: "gw-weather-0001.abc", assistantTexts: [], terminal: { kind: "ok" } }],
];

// OpenClaw's finalization attempt: the prepared attempt with its own prompt.
function finalization(settledAttempt: Result, extra: Record<string, unknown> = {}): FinalizeParams {
  return {
    attempt: {
      runId: "gw-weather-0001", sessionId: "Weather:1", sessionKey: "agent:main:weather", agentId: "main",
      provider: "openai", modelId: "gpt-5.5", model: { api: "openai-responses" }, thinkLevel: "off", timeoutMs: 60000,
      prompt: "Give the final answer from the settled tool results.", operation: "settled-tool-finalization", disableTools: true,
      ...extra,
    },
    settledAttempt,
  } as unknown as FinalizeParams;
}

const ANSWER = {
  decision: { runtime: "codex", harnessId: "codex" },
  result: { harnessId: "codex", text: "It is 18°C in Paris.", finishReason: "stop", usage: { input: 30, cachedInput: 0, output: 8, reasoning: 0, total: 38 } },
};

test("a settled tool turn carries its frozen transcript, and finalizeSettledTurn posts it to the run's …/finalize and returns only the answer", async () => {
  const settled = await settledTurn(toolTurnWithoutAnswer);
  const context = settled.settledTurnFinalizationContext;
  assert.ok(context !== undefined && context.source === "openclaw-transcript", "the settled attempt carries the context");
  assert.deepEqual(context.messages.map((m) => m.role), ["user", "assistant", "toolResult"]);
  assert.ok(Object.isFrozen(context.messages) && context.messages.every((m) => Object.isFrozen(m)), "frozen, array and messages");
  assert.notEqual(context.messages[0], settled.messagesSnapshot[0], "a copy: OpenClaw's later edits of the snapshot do not reach it");

  const lb = await startLoopback((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(ANSWER));
  });
  try {
    const harness = createHarness(lb.config);
    assert.ok(harness.finalizeSettledTurn !== undefined);
    const out = await harness.finalizeSettledTurn(finalization(settled));
    assert.equal(lb.requests.length, 1);
    assert.equal(lb.requests[0]?.path, "/v1/namespaces/agents/agentsessions/weather-1/turns/gw-weather-0001.abc/finalize", "the settled run, by the dispatcher's runId");
    assert.deepEqual(JSON.parse(lb.requests[0]?.body ?? "{}"), {
      sessionId: "Weather:1", sessionKey: "agent:main:weather", agentId: "main", provider: "openai", modelId: "gpt-5.5", thinkLevel: "off", timeoutMs: 60000,
      instructions: FINALIZATION_INSTRUCTIONS,
      transcriptSource: "openclaw-transcript",
      messages: [
        { role: "user", text: "What is the weather in Paris?" },
        { role: "toolCall", callId: "call_3", name: "get_weather", arguments: "{\"city\":\"Paris\"}" },
        { role: "toolResult", callId: "call_3", text: "18°C" },
      ],
      prompt: "Give the final answer from the settled tool results.",
    }, "no tools, no approvals, no gateway transcript: the frozen transcript and OpenClaw's prompt");
    assert.deepEqual(Object.keys(out).sort(), ["assistant", "usage"], "only the narrow result crosses");
    assert.deepEqual(out.assistant.content, [{ type: "text", text: "It is 18°C in Paris." }]);
    assert.equal(out.assistant.stopReason, "stop");
    assert.deepEqual([out.assistant.provider, out.assistant.model, out.assistant.api], ["openai", "gpt-5.5", "openai-responses"]);
    assert.deepEqual(out.usage, { input: 30, output: 8, cacheRead: 0, total: 38 });
  } finally {
    await lb.close();
  }
});

test("a turn that is not settled carries no finalization context", async () => {
  const cases: Array<[string, Array<[string, unknown]>]> = [
    ["no tool ran", [["transcript", { type: "message", role: "user", text: "hi" }], ["result", { runId: "r1", terminal: { kind: "ok" } }]]],
    ["a tool call has no result", [
      ["transcript", { type: "message", role: "user", text: "hi" }],
      ["transcript", { type: "tool_call", role: "assistant", callId: "c1", tool: "t", arguments: {} }],
      ["result", { runId: "r1", terminal: { kind: "ok" } }],
    ]],
    ["the turn has no result (a stream error)", [
      ["transcript", { type: "tool_call", role: "assistant", callId: "c1", tool: "t", arguments: {} }],
      ["transcript", { type: "tool_result", role: "tool", callId: "c1", tool: "t", text: "ok" }],
      ["error", { code: "HarnessUnavailable", message: "lost", scope: "", retryable: false }],
    ]],
  ];
  for (const [name, events] of cases) {
    assert.equal((await settledTurn(events)).settledTurnFinalizationContext, undefined, name);
  }
});

test("finalizeSettledTurn fails closed before any request on a missing, foreign, copied or mismatched context", async () => {
  const lb = await startLoopback((_req, res) => jsonError(res, 500, { code: "InternalError", message: "must not be asked", scope: "", retryable: false }));
  try {
    const harness = createHarness(lb.config);
    const settled = await settledTurn(toolTurnWithoutAnswer);
    const context = settled.settledTurnFinalizationContext;
    assert.ok(context !== undefined && context.source === "openclaw-transcript");
    const { settledTurnFinalizationContext: _, ...withoutContext } = settled;
    const cases: Array<[string, FinalizeParams, RegExp]> = [
      ["no context", finalization(withoutContext), /has no settledTurnFinalizationContext/],
      ["a harness context", finalization({ ...settled, settledTurnFinalizationContext: { source: "harness", data: {} } }), /context source is "harness"/],
      ["a copy of the context", finalization({ ...settled, settledTurnFinalizationContext: { source: "openclaw-transcript", messages: [...context.messages] } }), /not one this plugin froze/],
      ["another session's run", finalization(settled, { sessionId: "Other:2" }), /belongs to AgentSession weather-1/],
    ];
    for (const [name, p, message] of cases) {
      await assert.rejects(harness.finalizeSettledTurn!(p), message, name);
    }
    assert.equal(lb.requests.length, 0, "nothing reached the dispatcher");
  } finally {
    await lb.close();
  }
});

test("finalizeSettledTurn refuses an answer OpenClaw must not take, and a dispatcher refusal reaches OpenClaw through the error table", async () => {
  const answers: Array<[string, number, unknown, (err: unknown) => void]> = [
    ["an answer cut at the length limit", 200, { ...ANSWER, result: { ...ANSWER.result, finishReason: "length" } },
      (err) => assert.ok(err instanceof CompletionAnswerError && /finishReason "length" is not "stop"/.test(err.message))],
    ["an empty answer", 200, { ...ANSWER, result: { ...ANSWER.result, text: "  " } },
      (err) => assert.ok(err instanceof CompletionAnswerError && /the answer is empty/.test(err.message))],
    ["an answer with a field this plugin does not know (a tool call)", 200, { ...ANSWER, result: { ...ANSWER.result, toolCalls: [{ name: "exec" }] } },
      (err) => assert.ok(err instanceof CompletionAnswerError && /unknown result field "toolCalls"/.test(err.message))],
    ["a run the dispatcher says is still running", 400, { code: "BadRequest", message: "run gw-weather-0001.abc is still running", scope: "", retryable: false },
      (err) => {
        assert.ok(err instanceof AgentHarnessPreflightError);
        assert.match(err.message, /settled-turn finalization: the dispatcher refused it: BadRequest: run gw-weather-0001.abc is still running/);
        assert.equal(err.scope, undefined);
      }],
    ["a harness at capacity", 503, { code: "HarnessAtCapacity", message: "no place", scope: "harness", retryable: true },
      (err) => {
        assert.ok(err instanceof AgentHarnessPreflightError);
        assert.equal(err.scope, "harness", "the table allows the dispatcher's harness scope");
        assert.equal(err.userMessage, "The cluster's agent harness is at capacity; retry later.");
      }],
  ];
  let next = 0;
  const lb = await startLoopback((_req, res) => {
    const [, status, body] = answers[next++] ?? ["", 500, {}];
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body));
  });
  try {
    const harness = createHarness(lb.config);
    for (const [name, , , check] of answers) {
      const settled = await settledTurn(toolTurnWithoutAnswer);
      await assert.rejects(harness.finalizeSettledTurn!(finalization(settled)), (err: unknown) => {
        check(err);
        return true;
      }, name);
    }
  } finally {
    await lb.close();
  }
});

test("the frozen transcript goes to the dispatcher whole or not at all: a failed tool stays failed, and content it cannot carry is refused", () => {
  const user: AgentMessage = { role: "user", content: "Run it", timestamp: 1 } as AgentMessage;
  const call = { role: "assistant", content: [{ type: "toolCall", id: "c1", name: "exec", arguments: { cmd: "ls" } }], stopReason: "toolUse" } as unknown as AgentMessage;
  const failed = { role: "toolResult", toolCallId: "c1", toolName: "exec", content: [{ type: "text", text: "denied" }], isError: true } as unknown as AgentMessage;
  assert.deepEqual(wireMessages([user, call, failed]), [
    { role: "user", text: "Run it" },
    { role: "toolCall", callId: "c1", name: "exec", arguments: "{\"cmd\":\"ls\"}" },
    { role: "toolResult", callId: "c1", text: "[tool error] denied" },
  ]);
  const image = { role: "toolResult", toolCallId: "c1", toolName: "exec", content: [{ type: "image", data: "AAAA", mimeType: "image/png" }], isError: false } as unknown as AgentMessage;
  assert.throws(() => wireMessages([user, call, image]), /messages\[2\] \(toolResult c1\) has image content, which the finalization cannot carry/);
  const custom = { role: "custom", content: "x" } as unknown as AgentMessage;
  assert.throws(() => wireMessages([custom]), /messages\[0\] has role "custom"/);
  assert.equal(settledContext([user, call, failed], "", "s"), undefined, "no run, no context");
});
