// Answers run beside the stream's reading. Each test makes an answer wait
// for something only a reading stream can deliver (or for the other answer):
// a loop that awaited each answer before the next event would never get
// there, and the test would time out.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";

import { Attempt } from "../src/attempt.js";
import type { DispatcherClient } from "../src/client.js";
import { createHarness } from "../src/harness.js";
import { memoryMarkers } from "../src/transcript-marker.js";
import { attemptParams as params, closeWhenCancelled, deferred } from "./attempt-fixtures.js";
import { fakeHost, tool } from "./host.js";
import { accepted, startLoopback, write } from "./loopback.js";

const RUN = "gw-weather-0001";

function openTurn(res: ServerResponse, events: Array<[string, unknown]>): void {
  res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": RUN });
  write(res, 1, "selected", { runId: RUN, turnToken: "tt" });
  events.forEach(([event, data], i) => write(res, i + 2, event, data));
}

function end(res: ServerResponse, id: number): void {
  write(res, id, "result", { assistantTexts: ["done"], terminal: { kind: "ok" } });
  res.end();
}


test("partial replies keep reaching OpenClaw while a host tool call is unanswered", { timeout: 10_000 }, async (t) => {
  let turn: ServerResponse | undefined;
  const lb = await startLoopback((req, res) => {
    if (req.path.endsWith("/turns")) {
      turn = res;
      openTurn(res, [
        ["tool_call", { callId: "call_1", tool: "get_weather", arguments: { city: "Paris" } }],
        ["partial", { itemId: "msg_1", delta: "checking the weather" }],
      ]);
      return;
    }
    accepted(res);
    assert.ok(turn !== undefined);
    end(turn, 4);
  });
  closeWhenCancelled(t, lb);
  try {
    const partialArrived = deferred();
    // The tool answers only once the partial after its call reached OpenClaw.
    const weather = tool("get_weather", async () => {
      await partialArrived.promise;
      return { content: [{ type: "text", text: "18°C" }], details: {} };
    });
    const result = await createHarness(lb.config).runAttempt(params({
      hostCapabilities: fakeHost({ tools: [weather] }).caps,
      onPartialReply: () => partialArrived.resolve(),
    }));
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.deepEqual(JSON.parse(lb.requests[1]?.body ?? "{}"), { callId: "call_1", content: [{ type: "text", text: "18°C" }] });
  } finally {
    await lb.close();
  }
});

test("agent events keep reaching OpenClaw while a question waits for the user", { timeout: 10_000 }, async (t) => {
  let turn: ServerResponse | undefined;
  const lb = await startLoopback((req, res) => {
    if (req.path.endsWith("/turns")) {
      turn = res;
      openTurn(res, [
        ["user_input_request", { requestId: "call_8", callId: "call_8", questions: [{ id: "env", question: "Which?", options: [{ label: "staging" }] }] }],
        ["agent_event", { stream: "lifecycle", phase: "waiting", text: "waiting for the user" }],
      ]);
      return;
    }
    accepted(res);
    assert.ok(turn !== undefined);
    end(turn, 4);
  });
  closeWhenCancelled(t, lb);
  try {
    const eventArrived = deferred();
    const askUser = async () => {
      await eventArrived.promise;
      return { status: "answered" as const, answers: { answers: { env: ["staging"] } } };
    };
    const onAgentEvent = (e: { stream: string; data?: { phase?: string } }): void => {
      if (e.stream === "lifecycle" && e.data?.phase === "waiting") eventArrived.resolve();
    };
    const result = await createHarness(lb.config, { askUser }).runAttempt(params({ onAgentEvent }));
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.deepEqual(JSON.parse(lb.requests[1]?.body ?? "{}"), { requestId: "call_8", answers: { env: { choices: ["staging"] } } });
  } finally {
    await lb.close();
  }
});

test("two host tool calls of one turn run side by side", { timeout: 10_000 }, async (t) => {
  let turn: ServerResponse | undefined;
  let posted = 0;
  const lb = await startLoopback((req, res) => {
    if (req.path.endsWith("/turns")) {
      turn = res;
      openTurn(res, [
        ["tool_call", { callId: "call_1", tool: "get_weather", arguments: { city: "Paris" } }],
        ["tool_call", { callId: "call_2", tool: "get_weather", arguments: { city: "Lima" } }],
      ]);
      return;
    }
    accepted(res);
    assert.ok(turn !== undefined);
    if (++posted === 2) end(turn, 4);
  });
  closeWhenCancelled(t, lb);
  try {
    // Each call returns only once both have started.
    const started: string[] = [];
    const bothStarted = deferred();
    const weather = tool("get_weather", async (_id, args) => {
      const city = (args as { city: string }).city;
      started.push(city);
      if (started.length === 2) bothStarted.resolve();
      await bothStarted.promise;
      return { content: [{ type: "text", text: `18°C in ${city}` }], details: {} };
    });
    const result = await createHarness(lb.config).runAttempt(params({ hostCapabilities: fakeHost({ tools: [weather] }).caps }));
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.deepEqual(started, ["Paris", "Lima"]);
    const answered = lb.requests.filter((r) => r.path.endsWith("/tool-results")).map((r) => (JSON.parse(r.body) as { callId: string }).callId);
    assert.deepEqual(answered.sort(), ["call_1", "call_2"]);
  } finally {
    await lb.close();
  }
});

test("OpenClaw's abort tells a running host tool and interrupts the turn", { timeout: 10_000 }, async (t) => {
  const interrupted = deferred();
  const lb = await startLoopback((req, res) => {
    if (req.path.endsWith("/turns")) {
      openTurn(res, [["tool_call", { callId: "call_1", tool: "get_weather", arguments: { city: "Paris" } }]]);
      return;
    }
    accepted(res);
    if (req.path.endsWith("/interrupt")) interrupted.resolve();
  });
  closeWhenCancelled(t, lb);
  try {
    const abort = new AbortController();
    const toolSignal = deferred<AbortSignal>();
    // A tool that runs until it is told to stop.
    const weather = tool("get_weather", async (_id, _args, signal) => {
      assert.ok(signal !== undefined);
      toolSignal.resolve(signal);
      await new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(new Error("stopped")), { once: true }));
      return { content: [], details: {} };
    });
    const running = createHarness(lb.config).runAttempt(params({ hostCapabilities: fakeHost({ tools: [weather] }).caps, abortSignal: abort.signal }));
    const signal = await toolSignal.promise;
    abort.abort();
    const result = await running;
    assert.ok("terminal" in result);
    assert.equal(result.terminal.kind, "aborted");
    assert.equal(signal.aborted, true, "the tool was told");
    // The interrupt is sent when OpenClaw aborts, not awaited by the attempt.
    await interrupted.promise;
  } finally {
    await lb.close();
  }
});

test("the attempt returns at the turn's end although a host tool never finishes", { timeout: 10_000 }, async (t) => {
  const lb = await startLoopback((_req, res) => {
    // The dispatcher gave up on the call (its toolTimeoutMs) and the turn ended.
    openTurn(res, [
      ["tool_call", { callId: "call_1", tool: "get_weather", arguments: { city: "Paris" } }],
      ["tool_terminal", { callId: "call_1", tool: "get_weather", executionStarted: true, outcome: "failure", failure: { reason: "timeout" } }],
    ]);
    end(res, 4);
  });
  closeWhenCancelled(t, lb);
  try {
    const toolSignal = deferred<AbortSignal>();
    // A tool that ignores its signal and never returns.
    const weather = tool("get_weather", (_id, _args, signal) => {
      assert.ok(signal !== undefined);
      toolSignal.resolve(signal);
      return new Promise(() => undefined);
    });
    const result = await createHarness(lb.config).runAttempt(params({ hostCapabilities: fakeHost({ tools: [weather] }).caps }));
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.equal((await toolSignal.promise).aborted, true, "the tool was told the turn ended");
    assert.deepEqual(lb.requests.filter((r) => r.path.endsWith("/tool-results")), []);
  } finally {
    await lb.close();
  }
});

test("an answer whose attempt was aborted while it ran is not posted", async () => {
  const abort = new AbortController();
  // The tool finishes its work, but OpenClaw aborted meanwhile.
  const weather = tool("get_weather", async () => {
    abort.abort();
    return { content: [{ type: "text", text: "18°C" }], details: {} };
  });
  const attempt = await Attempt.prepare(params({ hostCapabilities: fakeHost({ tools: [weather] }).caps }), { markers: memoryMarkers() });
  const posts: string[] = [];
  const client = { postToolResult: async (_s: string, _r: string, _t: string, body: { callId: string }) => void posts.push(body.callId) };
  const to = { client: client as unknown as DispatcherClient, session: "weather-1", runId: RUN };
  await attempt.answer({ kind: "tool_call", call: { callId: "call_1", tool: "get_weather", arguments: { city: "Paris" } } }, "tt", to, abort.signal);
  assert.deepEqual(posts, []);
  await attempt.answer({ kind: "tool_call", call: { callId: "call_2", tool: "get_weather", arguments: { city: "Lima" } } }, "tt", to, new AbortController().signal);
  assert.deepEqual(posts, ["call_2"], "the same answer is posted while the attempt runs");
});
