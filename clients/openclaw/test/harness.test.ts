import { test } from "node:test";
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";
import { createServer as createNetServer, type AddressInfo } from "node:net";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { AgentHarnessPreflightError, type AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import { createHarness, HARNESS_ID } from "../src/harness.js";
import { fakeHost } from "./host.js";
import { jsonError, startLoopback } from "./loopback.js";

function write(res: ServerResponse, id: number, event: string, data: unknown): void {
  res.write(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

function params(extra: Record<string, unknown> = {}): AgentHarnessAttemptParamsV2 {
  return {
    runId: "gw-weather-0001", sessionId: "Weather:1", sessionKey: "agent:main:weather", agentId: "main",
    provider: "openai", modelId: "gpt-5.5", prompt: "What is the weather in Paris?", thinkLevel: "off", timeoutMs: 60000,
    hostCapabilities: fakeHost().caps,
    ...extra,
  } as unknown as AgentHarnessAttemptParamsV2;
}

test("a turn runs through the dispatcher: deltas stream into OpenClaw, a host tool round-trips, and the result names this harness", async () => {
  let turn: ServerResponse | undefined;
  const lb = await startLoopback((req, res) => {
    if (req.path.endsWith("/turns")) {
      turn = res;
      res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
      write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt", harnessId: "codex", runtime: "codex" });
      write(res, 2, "tool_call", { callId: "call_3", tool: "get_weather", arguments: { city: "Paris" } });
      return;
    }
    // The tool's answer arrived: the turn goes on to its end.
    res.writeHead(202, { "Content-Type": "application/json" });
    res.end('{"accepted":true}\n');
    assert.ok(turn !== undefined);
    write(turn, 3, "tool_terminal", { callId: "call_3", tool: "get_weather", executionStarted: true, outcome: "success" });
    write(turn, 4, "partial", { itemId: "msg_5", delta: "got " });
    write(turn, 5, "partial", { itemId: "msg_5", delta: "18°C" });
    write(turn, 6, "result", { runId: "gw-weather-0001", assistantTexts: ["got 18°C"], terminal: { kind: "ok" }, agentHarnessId: "codex" });
    turn.end();
  });
  try {
    const partials: string[] = [];
    const harness = createHarness(lb.config, {
      runTool: async (call) => ({ callId: call.callId ?? "", content: [{ type: "text", text: `18°C in ${(call.arguments as { city: string }).city}` }] }),
    });
    const result = await harness.runAttempt(params({ onPartialReply: (p: { text?: string }) => void partials.push(p.text ?? "") }));
    assert.equal(lb.requests[0]?.path, "/v1/namespaces/agents/agentsessions/weather-1/turns", "the session's name is kubectl harness's");
    const sent = JSON.parse(lb.requests[0]?.body ?? "{}") as Record<string, unknown>;
    assert.equal(sent["sessionId"], "Weather:1");
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

test("supports answers from the registry, synchronously", () => {
  const harness = createHarness({ dispatcherUrl: "https://127.0.0.1:1", tokenFile: "/nonexistent", namespace: "agents", routes: [{ provider: "openai", supported: true }] });
  assert.deepEqual(harness.supports({ provider: "openai", modelId: "gpt-5.5", requestedRuntime: HARNESS_ID } as Parameters<typeof harness.supports>[0]), { supported: true, priority: 100 });
});
