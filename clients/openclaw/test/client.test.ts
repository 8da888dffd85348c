import { test } from "node:test";
import assert from "node:assert/strict";

import { DispatcherClient } from "../src/client.js";
import { DispatcherError } from "../src/dispatcher-error.js";
import type { SseEvent } from "../src/sse.js";
import { jsonError, sse, startLoopback } from "./loopback.js";

async function drain(events: AsyncIterable<SseEvent>): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const ev of events) out.push(ev);
  return out;
}

test("a turn is posted to its session's turns endpoint with the token of that moment, and its stream is read", async () => {
  const lb = await startLoopback((_req, res) =>
    sse(res, [
      [1, "selected", { runId: "gw-1", turnToken: "tt" }],
      [2, "result", { runId: "gw-1", terminal: { kind: "ok" } }],
    ]),
  );
  try {
    const client = new DispatcherClient(lb.config);
    const first = await client.startTurn("demo", { runId: "gw-1", prompt: "Say hello" });
    assert.equal(first.runId, "gw-1");
    assert.deepEqual((await drain(first.events)).map((e) => e.event), ["selected", "result"]);
    lb.setToken("token-2-rotated");
    await drain((await client.startTurn("demo", { runId: "gw-1", prompt: "Say hello" }, { lastEventId: "1" })).events);
    const [a, b] = lb.requests;
    assert.equal(a?.method, "POST");
    assert.equal(a?.path, "/v1/namespaces/agents/agentsessions/demo/turns");
    assert.deepEqual(JSON.parse(a?.body ?? ""), { runId: "gw-1", prompt: "Say hello" });
    assert.equal(a?.headers["authorization"], "Bearer token-1");
    assert.equal(a?.headers["last-event-id"], undefined);
    assert.equal(b?.headers["authorization"], "Bearer token-2-rotated", "the rotated token is used at once");
    assert.equal(b?.headers["last-event-id"], "1", "a reconnect names the last event it has");
  } finally {
    await lb.close();
  }
});

test("a refused turn is a DispatcherError with the dispatcher's code, scope and status", async () => {
  const lb = await startLoopback((_req, res) =>
    jsonError(res, 503, { code: "HarnessUnavailable", message: "not ready", scope: "harness", retryable: true }),
  );
  try {
    await assert.rejects(new DispatcherClient(lb.config).startTurn("demo", {}), (err: unknown) => {
      assert.ok(err instanceof DispatcherError);
      assert.equal(err.status, 503);
      assert.deepEqual(err.wire, { code: "HarnessUnavailable", message: "not ready", scope: "harness", retryable: true });
      return true;
    });
  } finally {
    await lb.close();
  }
});

test("an error answer that is not the dispatcher's JSON still fails with its status", async () => {
  const lb = await startLoopback((_req, res) => {
    res.writeHead(502, { "Content-Type": "text/html" });
    res.end("<html>bad gateway</html>");
  });
  try {
    await assert.rejects(new DispatcherClient(lb.config).startTurn("demo", {}), (err: unknown) =>
      err instanceof DispatcherError && err.status === 502 && err.wire.code === "HTTP502",
    );
  } finally {
    await lb.close();
  }
});

test("a host tool's result is posted to its run with the turn token", async () => {
  const lb = await startLoopback((_req, res) => {
    res.writeHead(202, { "Content-Type": "application/json" });
    res.end('{"accepted":true}\n');
  });
  try {
    const client = new DispatcherClient(lb.config);
    await client.postToolResult("weather", "gw/weather 1", "tt", { callId: "call_3", content: [{ type: "text", text: "18°C" }] });
    await client.interrupt("weather", "gw/weather 1", "tt");
    const [tool, interrupt] = lb.requests;
    assert.equal(tool?.path, "/v1/namespaces/agents/agentsessions/weather/turns/gw%2Fweather%201/tool-results");
    assert.equal(tool?.headers["x-harness-turn-token"], "tt");
    assert.deepEqual(JSON.parse(tool?.body ?? ""), { callId: "call_3", content: [{ type: "text", text: "18°C" }] });
    assert.equal(interrupt?.path, "/v1/namespaces/agents/agentsessions/weather/turns/gw%2Fweather%201/interrupt");
  } finally {
    await lb.close();
  }
});

test("the dispatcher's certificate must be issued by the configured CA", async () => {
  const lb = await startLoopback((_req, res) => sse(res, [[1, "result", { terminal: { kind: "ok" } }]]));
  try {
    const { caFile: _ca, ...withoutCA } = lb.config;
    // Attack: the system's roots do not vouch for this server; no request reaches it.
    await assert.rejects(new DispatcherClient(withoutCA).startTurn("demo", {}), /self-signed certificate/);
    assert.equal(lb.requests.length, 0);
    // Control: the same request with the CA succeeds.
    await drain((await new DispatcherClient(lb.config).startTurn("demo", {})).events);
    assert.equal(lb.requests.length, 1);
  } finally {
    await lb.close();
  }
});

test("an isolated completion and a finalization are posted to their endpoints and their JSON answer is read whole", async () => {
  // An answer in many chunks with a character split across two of them.
  const text = "é".repeat(70_000);
  const lb = await startLoopback((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    const bytes = Buffer.from(JSON.stringify({ result: { text } }));
    res.write(bytes.subarray(0, 3));
    res.end(bytes.subarray(3));
  });
  try {
    const client = new DispatcherClient(lb.config);
    const completed = await client.complete("demo", { prompt: "Say hi", instructions: "Be brief." });
    assert.deepEqual(completed, { result: { text } }, "decoded once: the split character stays whole");
    await client.finalize("demo", "run/1", { prompt: "Finalize", transcriptSource: "openclaw-transcript" });
    const [a, b] = lb.requests;
    assert.equal(a?.path, "/v1/namespaces/agents/agentsessions/demo/completions");
    assert.deepEqual(JSON.parse(a?.body ?? ""), { prompt: "Say hi", instructions: "Be brief." });
    assert.equal(a?.headers["authorization"], "Bearer token-1");
    assert.equal(b?.path, "/v1/namespaces/agents/agentsessions/demo/turns/run%2F1/finalize", "the runId is one path segment");
  } finally {
    await lb.close();
  }
});

test("a refused completion is a DispatcherError with the dispatcher's code", async () => {
  const lb = await startLoopback((_req, res) =>
    jsonError(res, 422, { code: "ToolPolicyUnenforceable", message: "isolation cannot be proven", scope: "", retryable: false }),
  );
  try {
    await assert.rejects(new DispatcherClient(lb.config).complete("demo", { prompt: "hi" }), (err: unknown) => {
      assert.ok(err instanceof DispatcherError);
      assert.equal(err.status, 422);
      assert.equal(err.wire.code, "ToolPolicyUnenforceable");
      return true;
    });
  } finally {
    await lb.close();
  }
});
