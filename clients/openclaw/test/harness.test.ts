import { test } from "node:test";
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";

import { createHarness, HARNESS_ID } from "../src/harness.js";
import { memoryMarkers } from "../src/transcript-marker.js";
import { attemptParams as params } from "./attempt-fixtures.js";
import { fakeHost, tool } from "./host.js";
import { accepted, jsonError, startLoopback, startToolTurn, write } from "./loopback.js";

test("a turn runs through the dispatcher: the attempt's tools are offered, a call runs through OpenClaw's tool surface, deltas stream into OpenClaw, and the result names this harness", { timeout: 30_000 }, async () => {
  // Once the tool's answer arrived, the turn goes on to its end.
  const lb = await startToolTurn([
    [3, "tool_terminal", { callId: "call_3", tool: "get_weather", executionStarted: true, outcome: "success" }],
    [4, "partial", { itemId: "msg_5", delta: "got " }],
    [5, "partial", { itemId: "msg_5", delta: "18°C" }],
    [6, "result", { runId: "gw-weather-0001", assistantTexts: ["got 18°C"], terminal: { kind: "ok" }, agentHarnessId: "codex" }],
  ]);
  try {
    const partials: string[] = [];
    const weather = tool("get_weather", async (_id, args) => ({
      content: [{ type: "text", text: `18°C in ${(args as { city: string }).city}` }], details: {},
    }), "the weather of a city");
    const host = fakeHost({ tools: [weather] });
    const harness = createHarness(lb.config);
    const result = await harness.runAttempt(params({ hostCapabilities: host.caps, onPartialReply: (p: { text?: string }) => void partials.push(p.text ?? "") }));
    assert.equal(lb.requests[0]?.path, "/v1/namespaces/agents/agentsessions/weather-1/turns", "the session's name is kubectl harness's");
    const sent = JSON.parse(lb.requests[0]?.body ?? "{}") as Record<string, unknown>;
    assert.equal(sent["sessionId"], "Weather:1");
    assert.deepEqual(sent["tools"], [{
      name: "get_weather", description: "the weather of a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    }]);
    assert.equal(lb.requests[1]?.path, "/v1/namespaces/agents/agentsessions/weather-1/turns/gw-weather-0001/tool-results");
    assert.equal(lb.requests[1]?.headers["x-harness-turn-token"], "tt");
    assert.deepEqual(JSON.parse(lb.requests[1]?.body ?? "{}"), { callId: "call_3", content: [{ type: "text", text: "18°C in Paris" }] });
    assert.deepEqual(partials, ["got ", "got 18°C"]);
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.deepEqual(result.assistantTexts, ["got 18°C"]);
    assert.equal(result.agentHarnessId, HARNESS_ID);
  } finally {
    await lb.close();
  }
});

test("a turn the dispatcher refused reaches OpenClaw as the table's preflight error", async () => {
  const answers = [
    { status: 409, body: { code: "EmbeddedRuntimeSelected", message: "run it on the gateway", scope: "harness", retryable: false }, scope: "harness" },
    { status: 422, body: { code: "HarnessUnsupported", message: "route not supported", scope: "", retryable: false }, scope: undefined },
  ];
  let next = 0;
  const lb = await startLoopback((_req, res) => {
    const a = answers[next++];
    if (a !== undefined) jsonError(res, a.status, a.body);
  });
  try {
    const harness = createHarness(lb.config);
    for (const a of answers) {
      await assert.rejects(harness.runAttempt(params()), (err: unknown) => {
        assert.ok(err instanceof AgentHarnessPreflightError);
        assert.equal(err.scope, a.scope);
        assert.match(err.message, new RegExp(a.body.code));
        return true;
      });
    }
  } finally {
    await lb.close();
  }
});

test("a stream that dropped is resumed with Last-Event-ID, never run again", async () => {
  let n = 0;
  const lb = await startLoopback((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
    if (n++ === 0) {
      write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt" });
      // The connection drops mid-turn, once event 2 was sent.
      res.write(`id: 2\nevent: partial\ndata: ${JSON.stringify({ itemId: "m", delta: "Hel" })}\n\n`, () => res.destroy());
      return;
    }
    write(res, 3, "partial", { itemId: "m", delta: "lo" });
    write(res, 4, "result", { assistantTexts: ["Hello"], terminal: { kind: "ok" } });
    res.end();
  });
  try {
    const partials: string[] = [];
    const result = await createHarness(lb.config).runAttempt(params({ onPartialReply: (p: { text?: string }) => void partials.push(p.text ?? "") }));
    assert.equal(lb.requests.length, 2);
    assert.equal(lb.requests[1]?.headers["last-event-id"], "2");
    assert.equal(lb.requests[1]?.body, lb.requests[0]?.body, "the same body: the dispatcher replays, never re-runs");
    assert.deepEqual(partials, ["Hel", "Hello"]);
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
  } finally {
    await lb.close();
  }
});

test("an unreachable dispatcher fails the attempt before anything ran, without scope", async () => {
  // A listener that drops every connection at once: the dispatcher is never
  // reached, and no other process can take the port meanwhile.
  const dropper = createNetServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => dropper.listen(0, "127.0.0.1", resolve));
  const port = (dropper.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), "oc-token-"));
  try {
    writeFileSync(join(dir, "token"), "t");
    const config = { dispatcherUrl: `https://127.0.0.1:${port}`, tokenFile: join(dir, "token"), namespace: "agents", routes: [] };
    await assert.rejects(createHarness(config).runAttempt(params()), (err: unknown) =>
      err instanceof AgentHarnessPreflightError && err.scope === undefined && /DispatcherUnreachable/.test(err.message),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await new Promise<void>((resolve) => dropper.close(() => resolve()));
  }
});

test("a start whose answer was lost after the dispatcher read it is a claimed failure, posted again with the same body, never a preflight error", async () => {
  // The dispatcher reads the POST and the connection drops before any answer:
  // the turn may have started, so OpenClaw must not run it anywhere else.
  const lb = await startLoopback((_req, res) => res.socket?.destroy());
  try {
    const result = await createHarness(lb.config).runAttempt(params());
    assert.ok("terminal" in result);
    assert.equal(result.terminal.kind, "failed");
    assert.match(String((result.terminal as { error?: Error }).error?.message), /DispatcherUnreachable: the dispatcher's answer to the turn was lost, so it may have run/);
    assert.deepEqual(result.replayMetadata, { hadPotentialSideEffects: true, replaySafe: false });
    assert.equal(lb.requests.length, 4, "the first post and three reconnects");
    assert.ok(lb.requests.every((r) => r.body === lb.requests[0]?.body), "the same body and runId: the dispatcher replays, never runs it twice");
  } finally {
    await lb.close();
  }
});

test("a proxy's server error instead of the dispatcher's answer is a claimed failure too", async () => {
  const lb = await startLoopback((_req, res) => {
    res.writeHead(502, { "Content-Type": "text/html" });
    res.end("<html>bad gateway</html>");
  });
  try {
    const result = await createHarness(lb.config).runAttempt(params());
    assert.ok("terminal" in result);
    assert.equal(result.terminal.kind, "failed");
    assert.match(String((result.terminal as { error?: Error }).error?.message), /may have run: .*HTTP 502 without the dispatcher.s error body/);
    assert.equal(result.replayMetadata.replaySafe, false);
  } finally {
    await lb.close();
  }
});

test("a start whose answer was lost runs once the same body is answered", async () => {
  let n = 0;
  const lb = await startLoopback((_req, res) => {
    if (n++ === 0) {
      res.socket?.destroy();
      return;
    }
    res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
    write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt" });
    write(res, 2, "result", { assistantTexts: ["sunny"], terminal: { kind: "ok" } });
    res.end();
  });
  try {
    const result = await createHarness(lb.config).runAttempt(params());
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.equal(lb.requests.length, 2);
    assert.equal(lb.requests[1]?.body, lb.requests[0]?.body);
    assert.equal(lb.requests[1]?.headers["last-event-id"], undefined, "no event was read: the dispatcher replays from the start");
  } finally {
    await lb.close();
  }
});

test("supports answers from the registry, synchronously", () => {
  const harness = createHarness({ dispatcherUrl: "https://127.0.0.1:1", tokenFile: "/nonexistent", namespace: "agents", routes: [{ provider: "openai", supported: true }] });
  assert.deepEqual(harness.supports({ provider: "openai", modelId: "gpt-5.5", requestedRuntime: HARNESS_ID } as Parameters<typeof harness.supports>[0]), { supported: true, priority: 100 });
});

test("approvals and questions of a turn are answered through OpenClaw and posted with the turn token", { timeout: 30_000 }, async () => {
  let turn: ServerResponse | undefined;
  const lb = await startLoopback((req, res) => {
    if (req.path.endsWith("/turns")) {
      turn = res;
      res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
      write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt" });
      write(res, 2, "approval_request", {
        requestId: "call_3", kind: "command", callId: "call_3", tool: "exec", command: "echo hi", cwd: "/w",
        decisions: ["approve_once", "approve_for_turn", "deny"], expiresAt: new Date(Date.now() + 60_000).toISOString(),
      });
      return;
    }
    accepted(res);
    assert.ok(turn !== undefined);
    // Each answer lets the runtime go on: the approval, then the question, then the end.
    if (req.path.endsWith("/approvals")) {
      write(turn, 3, "user_input_request", {
        requestId: "call_8", callId: "call_8", questions: [{ id: "env", question: "Which?", options: [{ label: "staging" }] }],
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
      });
      return;
    }
    write(turn, 4, "result", { assistantTexts: ["done"], terminal: { kind: "ok" } });
    turn.end();
  });
  try {
    const host = fakeHost();
    const harness = createHarness(lb.config, {
      askUser: async () => ({ status: "answered", answers: { answers: { env: ["staging"] } } }),
    });
    const result = await harness.runAttempt(params({ hostCapabilities: host.caps }));
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.deepEqual(host.beforeToolCalls.map((r) => [r.toolName, r.params, r.nativeOperation]), [["exec", { command: "echo hi" }, { cwd: "/w" }]]);
    const approval = lb.requests[1];
    assert.equal(approval?.path, "/v1/namespaces/agents/agentsessions/weather-1/turns/gw-weather-0001/approvals");
    assert.equal(approval?.headers["x-harness-turn-token"], "tt");
    assert.deepEqual(JSON.parse(approval?.body ?? "{}"), { requestId: "call_3", decision: "approve_once" });
    const answer = lb.requests[2];
    assert.equal(answer?.path, "/v1/namespaces/agents/agentsessions/weather-1/turns/gw-weather-0001/user-input");
    assert.equal(answer?.headers["x-harness-turn-token"], "tt");
    assert.deepEqual(JSON.parse(answer?.body ?? "{}"), { requestId: "call_8", answers: { env: { choices: ["staging"] } } });
  } finally {
    await lb.close();
  }
});

test("the gateway's own turns since the dispatcher's last one go with the next turn, again until a thread got them", async () => {
  const streams: Array<Array<[number, string, unknown]>> = [];
  const lb = await startLoopback((req, res) => {
    const body = JSON.parse(req.body) as { runId: string };
    res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": body.runId });
    for (const [id, event, data] of streams.shift() ?? []) write(res, id, event, data);
    res.end();
  });
  try {
    // The clock at each attempt's start, and OpenClaw's transcript as it
    // grows: the plugin's turns (each prompt written at the attempt's start,
    // each reply after it returned) and, between gw-1 and gw-2, a turn of
    // the embedded runtime.
    const starts = [1000, 3000, 5000, 7000];
    const now = (): number => starts.shift() ?? Number.NaN;
    const transcript = [
      { role: "user" as const, text: "capital of France?", timestamp: 1000 },
      { role: "assistant" as const, text: "Paris.", timestamp: 2500 },
      { role: "user" as const, text: "capital of Peru?", timestamp: 2600 },
      { role: "assistant" as const, text: "Lima.", timestamp: 2700 },
      { role: "user" as const, text: "and its population?", timestamp: 3000 },
      { role: "assistant" as const, text: "About 10 million.", timestamp: 4500 },
      { role: "user" as const, text: "and now?", timestamp: 5000 },
      { role: "assistant" as const, text: "ok", timestamp: 6500 },
      { role: "user" as const, text: "next", timestamp: 7000 },
    ];
    const reads: number[] = [];
    const readConversation = async (q: { minTimestampMs: number }) => {
      reads.push(q.minTimestampMs);
      // What exists when the attempt starts.
      return transcript.filter((m) => m.timestamp >= q.minTimestampMs && m.timestamp <= (starts[0] ?? 0));
    };
    const harness = createHarness(lb.config, { readConversation, now });
    const turn = (runId: string, prompt: string, reply: string, reseeded: boolean): Promise<unknown> => {
      const events: Array<[number, string, unknown]> = [[1, "selected", { runId, turnToken: "tt" }]];
      if (reseeded) events.push([2, "agent_event", { stream: "lifecycle", phase: "reseeded", data: { gatewayMessages: 2 } }]);
      events.push([3, "result", { assistantTexts: [reply], terminal: { kind: "ok" } }]);
      streams.push(events);
      return harness.runAttempt(params({ runId, prompt }));
    };
    await turn("gw-1", "capital of France?", "Paris.", false);
    await turn("gw-2", "and its population?", "About 10 million.", false);
    await turn("gw-3", "and now?", "ok", true);
    await turn("gw-4", "next", "fine", false);
    const bodies = lb.requests.map((r) => JSON.parse(r.body) as { runId: string; gatewayTranscript?: unknown });
    const sent = bodies.map((b) => b.gatewayTranscript);
    const peru = [{ role: "user", text: "capital of Peru?" }, { role: "assistant", text: "Lima." }];
    assert.equal(sent[0], undefined, "the first turn here has nothing to catch up on");
    // afterRunId names the dispatcher's run of the turn before (run-id.ts).
    assert.deepEqual(sent[1], { afterRunId: bodies[0]?.runId, messages: peru });
    assert.deepEqual(sent[2], { afterRunId: bodies[1]?.runId, messages: peru }, "gw-2 had no reseeded event: its thread lacks them, they go again");
    assert.equal(sent[3], undefined, "gw-3 gave them to its thread; nothing ran elsewhere since");
    assert.deepEqual(reads, [1000, 1000, 5000], "the window starts at the first turn, and at gw-3 once its thread got them");
  } finally {
    await lb.close();
  }
});

test("OpenClaw's agent-end side effects run once after each turn, with its outcome", async () => {
  const lb = await startLoopback((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
    write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt" });
    write(res, 2, "result", { assistantTexts: ["sunny"], terminal: { kind: "ok" } });
    res.end();
  });
  try {
    const ends: Array<{ event: { runId?: string; success: boolean }; ctx: { sessionKey?: string; agentId?: string; modelId?: string } }> = [];
    const harness = createHarness(lb.config, { agentEnd: (p) => void ends.push(p) });
    await harness.runAttempt(params());
    assert.equal(ends.length, 1);
    assert.equal(ends[0]?.event.runId, "gw-weather-0001");
    assert.equal(ends[0]?.event.success, true);
    assert.equal(ends[0]?.ctx.sessionKey, "agent:main:weather");
    assert.equal(ends[0]?.ctx.agentId, "main");
    assert.equal(ends[0]?.ctx.modelId, "gpt-5.5");
  } finally {
    await lb.close();
  }
});

test("an attempt without the host capability fails before anything is sent", async () => {
  const lb = await startLoopback((_req, res) => jsonError(res, 500, {}));
  try {
    await assert.rejects(createHarness(lb.config).runAttempt(params({ hostCapabilities: undefined })), (err: unknown) =>
      err instanceof AgentHarnessPreflightError && /hostCapabilities/.test(err.message),
    );
    assert.equal(lb.requests.length, 0);
  } finally {
    await lb.close();
  }
});

test("a session whose last turn is not the marker's runs the turn without the gateway's messages instead of failing every turn", async () => {
  const lb = await startLoopback((req, res) => {
    if ((JSON.parse(req.body) as { gatewayTranscript?: unknown }).gatewayTranscript !== undefined) {
      jsonError(res, 422, { code: "SessionMismatch", message: "gatewayTranscript.afterRunId \"gw-old\" is not the session's last turn \"cli-1\"", scope: "", retryable: false });
      return;
    }
    res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
    write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt" });
    write(res, 2, "result", { assistantTexts: ["sunny"], terminal: { kind: "ok" } });
    res.end();
  });
  try {
    const markers = memoryMarkers();
    await markers.register("Weather:1", { afterRunId: "gw-old", sinceMs: 0, ownDigests: [] });
    const readConversation = async () => [{ role: "user" as const, text: "asked on the gateway", timestamp: 5 }, { role: "assistant" as const, text: "answered there", timestamp: 6 }];
    const result = await createHarness(lb.config, { markers, readConversation }).runAttempt(params());
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.equal(lb.requests.length, 2);
    const [first, second] = lb.requests.map((r) => JSON.parse(r.body) as { runId: string; gatewayTranscript?: { afterRunId: string } });
    assert.equal(first?.gatewayTranscript?.afterRunId, "gw-old");
    assert.equal(second?.gatewayTranscript, undefined);
    assert.equal(second?.runId, first?.runId, "the run was refused before it was journaled: its id is still free");
    assert.equal((await markers.lookup("Weather:1"))?.afterRunId, "gw-weather-0001");
  } finally {
    await lb.close();
  }
});
