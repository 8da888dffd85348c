import { test } from "node:test";
import assert from "node:assert/strict";

import { type AttemptCallbacks, TurnProjection } from "../src/events.js";
import type { SseEvent } from "../src/sse.js";

type Call = [string, unknown];

// recorder returns callbacks that log each call in order; observeToolTerminal
// answers like the host's accumulator would.
function recorder(): { calls: Call[]; cb: AttemptCallbacks } {
  const calls: Call[] = [];
  const cb: AttemptCallbacks = {
    onAssistantMessageStart: () => void calls.push(["onAssistantMessageStart", undefined]),
    onPartialReply: (p) => void calls.push(["onPartialReply", p]),
    onAgentEvent: (e) => void calls.push(["onAgentEvent", e]),
    onReasoningStream: (p) => void calls.push(["onReasoningStream", p]),
    onReasoningEnd: () => void calls.push(["onReasoningEnd", undefined]),
    observeToolTerminal: (o) => {
      calls.push(["observeToolTerminal", o]);
      return {
        executionStarted: o.executionStarted === true,
        sideEffectEvidence: false,
        effectReceipt: { state: "failed_no_effect" },
        lastToolError: { toolName: o.toolName, error: "from the host" },
      };
    },
  };
  return { calls, cb };
}

function ev(id: number, event: string, data: unknown): SseEvent {
  return { id: String(id), event, data: JSON.stringify(data) };
}

async function applyAll(p: TurnProjection, events: SseEvent[]): Promise<unknown[]> {
  const returned: unknown[] = [];
  for (const e of events) {
    const r = await p.apply(e);
    if (r !== undefined) returned.push(r);
  }
  return returned;
}

test("streamed text reaches OpenClaw as partial replies, the whole message so far with each delta", async () => {
  const { calls, cb } = recorder();
  const p = new TurnProjection(cb);
  await applyAll(p, [
    ev(4, "partial", { itemId: "msg_2", delta: "Hello " }),
    ev(5, "partial", { itemId: "msg_2", delta: "from " }),
    ev(6, "partial", { itemId: "msg_3", delta: "stub" }),
  ]);
  assert.deepEqual(calls, [
    ["onAssistantMessageStart", undefined],
    ["onPartialReply", { text: "Hello ", delta: "Hello " }],
    ["onPartialReply", { text: "Hello from ", delta: "from " }],
    ["onAssistantMessageStart", undefined],
    ["onPartialReply", { text: "stub", delta: "stub" }],
  ]);
  assert.equal(p.lastEventId, "6");
});

test("runtime activity reaches onAgentEvent with its stream and phase, and tool items are counted", async () => {
  const { calls, cb } = recorder();
  const p = new TurnProjection(cb);
  await applyAll(p, [
    ev(3, "agent_event", { stream: "lifecycle", phase: "start", status: "inProgress" }),
    ev(4, "agent_event", { stream: "tool", phase: "start", itemId: "call_3", callId: "call_3", tool: "get_weather" }),
    ev(9, "agent_event", { stream: "tool", phase: "end", itemId: "call_3", callId: "call_3", tool: "get_weather", status: "completed" }),
  ]);
  assert.deepEqual(calls, [
    ["onAgentEvent", { stream: "lifecycle", data: { phase: "start", status: "inProgress" } }],
    ["onAgentEvent", { stream: "tool", data: { phase: "start", itemId: "call_3", toolCallId: "call_3", name: "get_weather" } }],
    ["onAgentEvent", { stream: "tool", data: { phase: "end", status: "completed", itemId: "call_3", toolCallId: "call_3", name: "get_weather" } }],
  ]);
  assert.deepEqual(p.itemLifecycle, { startedCount: 1, completedCount: 1, activeCount: 0 });
});

test("reasoning deltas reach onReasoningStream and their end onReasoningEnd", async () => {
  const { calls, cb } = recorder();
  await applyAll(new TurnProjection(cb), [
    ev(1, "agent_event", { stream: "reasoning", phase: "delta", text: "thinking" }),
    ev(2, "agent_event", { stream: "reasoning", phase: "end" }),
  ]);
  assert.deepEqual(
    calls.filter(([name]) => name !== "onAgentEvent"),
    [
      ["onReasoningStream", { text: "thinking", isReasoning: true }],
      ["onReasoningEnd", undefined],
    ],
  );
});

test("a host tool call is handed back to be run through OpenClaw's tool surface", async () => {
  const { calls, cb } = recorder();
  const returned = await applyAll(new TurnProjection(cb), [
    ev(5, "tool_call", { callId: "call_3", tool: "get_weather", arguments: { city: "Paris" } }),
  ]);
  assert.deepEqual(returned, [{ kind: "tool_call", call: { callId: "call_3", tool: "get_weather", arguments: { city: "Paris" } } }]);
  assert.deepEqual(calls, []);
});

test("each tool's terminal outcome is reported once to observeToolTerminal with the execution boundary's facts", async () => {
  const { calls, cb } = recorder();
  const p = new TurnProjection(cb);
  await applyAll(p, [
    ev(8, "tool_terminal", {
      callId: "call_9", tool: "get_weather", arguments: { city: "Paris" }, executionStarted: true, outcome: "failure",
      failure: { reason: "timeout", message: "tool \"get_weather\" did not answer within 1m0s" },
    }),
    ev(10, "tool_terminal", {
      callId: "call_3", tool: "exec", arguments: { command: "ls", cwd: "/w" }, executionStarted: true, outcome: "success", native: true,
      nativeMutation: { mutation: "possibly", mutatingAction: true, replaySafe: false, actionFingerprint: "sha256:x" },
    }),
  ]);
  assert.deepEqual(calls, [
    ["observeToolTerminal", {
      toolName: "get_weather", toolCallId: "call_9", arguments: { city: "Paris" }, executionStarted: true, outcome: "failure",
      failure: { error: "tool \"get_weather\" did not answer within 1m0s", errorCode: "timeout", timedOut: true },
    }],
    ["observeToolTerminal", {
      toolName: "exec", toolCallId: "call_3", arguments: { command: "ls", cwd: "/w" }, executionStarted: true, outcome: "success",
      nativeMutation: { mutatingAction: true, replaySafe: false },
    }],
  ]);
  assert.deepEqual(p.toolMetas, [
    { toolName: "get_weather", toolCallId: "call_9", isError: true, replaySafe: false },
    { toolName: "exec", toolCallId: "call_3", isError: false, replaySafe: false },
  ]);
  assert.equal(p.hadPotentialSideEffects, true);
  assert.deepEqual(p.lastToolResolution?.lastToolError, { toolName: "exec", error: "from the host" });
});

test("a declined native action that never started leaves no side effect behind", async () => {
  const p = new TurnProjection({});
  await p.apply(ev(1, "tool_terminal", {
    callId: "call_13", tool: "exec", executionStarted: false, outcome: "failure", native: true,
    failure: { reason: "declined", message: "denied" }, nativeMutation: { mutation: "possibly", mutatingAction: false, replaySafe: true },
  }));
  assert.equal(p.hadPotentialSideEffects, false);
});

test("approval and user-input requests are shown to OpenClaw as agent events and handed back to be answered", async () => {
  const { calls, cb } = recorder();
  const returned = await applyAll(new TurnProjection(cb), [
    ev(5, "approval_request", { requestId: "call_3", kind: "command", callId: "call_3", tool: "exec" }),
    ev(6, "request_resolved", { requestId: "call_3", callId: "call_3", resolution: "timed_out" }),
    ev(7, "user_input_request", { requestId: "call_8", callId: "call_8" }),
  ]);
  assert.deepEqual(calls.map(([, e]) => [(e as { stream: string }).stream, (e as { data: { phase: string } }).data.phase]), [
    ["approval", "requested"],
    ["approval", "resolved"],
    ["user_input", "requested"],
  ]);
  assert.deepEqual(returned, [
    { kind: "approval", request: { requestId: "call_3", kind: "command", callId: "call_3", tool: "exec" } },
    { kind: "user_input", request: { requestId: "call_8", callId: "call_8" } },
  ]);
});

test("a reseeded lifecycle event records that the gateway's messages reached the turn's thread", async () => {
  const p = new TurnProjection({});
  await p.apply(ev(3, "agent_event", { stream: "lifecycle", phase: "start" }));
  assert.equal(p.reseeded, false);
  await p.apply(ev(4, "agent_event", { stream: "lifecycle", phase: "reseeded", data: { gatewayMessages: 2 } }));
  assert.equal(p.reseeded, true);
});

test("the headless CLI's missing callbacks are skipped, and the stream's end is kept", async () => {
  const p = new TurnProjection({});
  await applyAll(p, [
    ev(1, "selected", { runId: "gw-1", turnToken: "t", harnessId: "codex", runtime: "codex" }),
    ev(2, "partial", { itemId: "m", delta: "hi" }),
    ev(3, "agent_event", { stream: "reasoning", phase: "delta", text: "x" }),
    ev(4, "transcript", { type: "message", role: "assistant", text: "hi" }),
    ev(5, "result", { runId: "gw-1", assistantTexts: ["hi"], terminal: { kind: "ok" } }),
  ]);
  assert.equal(p.selected?.turnToken, "t");
  assert.deepEqual(p.end, { kind: "result", result: { runId: "gw-1", assistantTexts: ["hi"], terminal: { kind: "ok" } } });
});

test("a stream error event ends the turn as a claimed failure", async () => {
  const p = new TurnProjection({});
  await p.apply(ev(2, "error", { code: "HarnessUnavailable", message: "gone", scope: "", retryable: true, replaySafe: false }));
  assert.deepEqual(p.end, { kind: "error", error: { code: "HarnessUnavailable", message: "gone", scope: "", retryable: true, replaySafe: false } });
});

test("the approval and question facts OpenClaw shows as agent events are escaped", async () => {
  const { calls, cb } = recorder();
  const returned = await applyAll(new TurnProjection(cb), [
    ev(5, "approval_request", { requestId: "call_3", kind: "permissions", reason: "x\u001b[2K\rfine", permissions: { "net\u202e": ["a\r"] } }),
    ev(6, "user_input_request", { requestId: "call_8", questions: [{ id: "q", question: "ok?", options: [{ label: "plain" }] }] }),
  ]);
  assert.deepEqual(calls.map(([, e]) => (e as { data: unknown }).data), [
    { requestId: "call_3", kind: "permissions", reason: "x\\x1b[2K\\rfine", permissions: { "net\\u202e": ["a\\r"] }, phase: "requested" },
    { requestId: "call_8", questions: [{ id: "q", question: "ok?", options: [{ label: "plain" }] }], phase: "requested" },
  ]);
  // What is answered is what the runtime asked, unchanged.
  assert.deepEqual(returned[0], { kind: "approval", request: { requestId: "call_3", kind: "permissions", reason: "x\u001b[2K\rfine", permissions: { "net\u202e": ["a\r"] } } });
});
