import { test } from "node:test";
import assert from "node:assert/strict";
import type { ServerResponse } from "node:http";

import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { RetrySettings } from "../src/config.js";
import { DispatcherError, type WireError } from "../src/dispatcher-error.js";
import { createHarness } from "../src/harness.js";
import { retryWaitMs, type Waiter } from "../src/start-retry.js";
import { attemptParams as params } from "./attempt-fixtures.js";
import { startLoopback, write } from "./loopback.js";

const capacity: WireError = { code: "HarnessAtCapacity", message: "every ready server is full", scope: "harness", retryable: true };
const unsupported: WireError = { code: "HarnessUnsupported", message: "route not supported", scope: "", retryable: false };
const bounds: RetrySettings = { maxRetries: 3, maxWaitSeconds: 30 };

test("a refusal is waited out only when the dispatcher says it may pass and when, within the bounds", () => {
  const refusal = (wire: WireError, retryAfter?: number): DispatcherError => new DispatcherError(wire, 503, retryAfter);
  const cases: Array<[string, unknown, { retries: number; elapsedMs: number; timeoutMs?: number }, number | undefined]> = [
    ["retryable with Retry-After: its seconds", refusal(capacity, 2), { retries: 0, elapsedMs: 0 }, 2000],
    ["Retry-After at the bound", refusal(capacity, 30), { retries: 0, elapsedMs: 0 }, 30_000],
    ["Retry-After beyond maxWaitSeconds", refusal(capacity, 31), { retries: 0, elapsedMs: 0 }, undefined],
    ["retryable without Retry-After: the wait is unknown", refusal(capacity), { retries: 0, elapsedMs: 0 }, undefined],
    ["not retryable, even with Retry-After", refusal(unsupported, 1), { retries: 0, elapsedMs: 0 }, undefined],
    ["the last retry was made", refusal(capacity, 1), { retries: 3, elapsedMs: 0 }, undefined],
    ["the wait ends at the attempt's timeout", refusal(capacity, 2), { retries: 1, elapsedMs: 1000, timeoutMs: 3000 }, 2000],
    ["the wait would end after the attempt's timeout", refusal(capacity, 2), { retries: 1, elapsedMs: 1001, timeoutMs: 3000 }, undefined],
    ["a claimed failure (a stream error, no status)", new DispatcherError(capacity, undefined, 1), { retries: 0, elapsedMs: 0 }, undefined],
    ["an unreachable dispatcher", new Error("connect ECONNREFUSED"), { retries: 0, elapsedMs: 0 }, undefined],
  ];
  for (const [name, err, state, want] of cases) assert.equal(retryWaitMs(err, state, bounds), want, name);
});

/** A clock that moves only when the plugin sleeps; each sleep is recorded. */
function fakeWaiter(onSleep?: (signal?: AbortSignal) => Promise<void>): { waiter: Waiter; sleeps: number[] } {
  let now = 0;
  const sleeps: number[] = [];
  const waiter: Waiter = {
    now: () => now,
    sleep: async (ms, signal) => {
      sleeps.push(ms);
      if (onSleep !== undefined) await onSleep(signal);
      now += ms;
    },
  };
  return { waiter, sleeps };
}

function refuse(res: ServerResponse, wire: WireError, status: number, retryAfter?: string): void {
  res.writeHead(status, { "Content-Type": "application/json", ...(retryAfter !== undefined ? { "Retry-After": retryAfter } : {}) });
  res.end(JSON.stringify(wire) + "\n");
}

function runs(res: ServerResponse): void {
  res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
  write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt" });
  write(res, 2, "result", { assistantTexts: ["sunny"], terminal: { kind: "ok" } });
  res.end();
}

function refusedAs(code: string, scope: string | undefined) {
  return (err: unknown): boolean => {
    assert.ok(err instanceof AgentHarnessPreflightError);
    assert.match(err.message, new RegExp(code));
    assert.equal(err.scope, scope);
    return true;
  };
}

test("a turn refused at capacity is posted again after the dispatcher's Retry-After, with the same body and runId, and runs", async () => {
  let n = 0;
  const lb = await startLoopback((_req, res) => (n++ === 0 ? refuse(res, capacity, 503, "2") : runs(res)));
  try {
    const { waiter, sleeps } = fakeWaiter();
    const result = await createHarness(lb.config, { waiter }).runAttempt(params());
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.deepEqual(sleeps, [2000]);
    assert.equal(lb.requests.length, 2);
    assert.equal(lb.requests[1]?.body, lb.requests[0]?.body, "the same body: nothing was journaled, the runId is still free");
    // The runId derived from OpenClaw's for this body (run-id.ts), so the same on the retry.
    assert.match((JSON.parse(lb.requests[1]?.body ?? "{}") as { runId?: string }).runId ?? "", /^gw-weather-0001\.[0-9a-f]{16}$/);
  } finally {
    await lb.close();
  }
});

test("a Retry-After longer than retry.maxWaitSeconds fails the attempt at once with the refusal's preflight error", async () => {
  const lb = await startLoopback((_req, res) => refuse(res, capacity, 503, "120"));
  try {
    const { waiter, sleeps } = fakeWaiter();
    // The attempt's timeout (10 min) would allow the wait: the bound alone refuses it.
    const attempt = params({ timeoutMs: 600_000 });
    await assert.rejects(createHarness({ ...lb.config, retry: bounds }, { waiter }).runAttempt(attempt), refusedAs("HarnessAtCapacity", "harness"));
    assert.deepEqual(sleeps, []);
    assert.equal(lb.requests.length, 1);
  } finally {
    await lb.close();
  }
});

test("a refusal that persists fails the attempt after retry.maxRetries retries, or sooner at the attempt's timeout", async () => {
  const lb = await startLoopback((_req, res) => refuse(res, { ...capacity, code: "HarnessUnavailable" }, 503, "1"));
  try {
    const first = fakeWaiter();
    const harness = createHarness({ ...lb.config, retry: { maxRetries: 2, maxWaitSeconds: 30 } }, { waiter: first.waiter });
    await assert.rejects(harness.runAttempt(params()), refusedAs("HarnessUnavailable", "harness"));
    assert.deepEqual(first.sleeps, [1000, 1000]);
    assert.equal(lb.requests.length, 3);

    const second = fakeWaiter();
    const timed = createHarness({ ...lb.config, retry: { maxRetries: 20, maxWaitSeconds: 30 } }, { waiter: second.waiter });
    await assert.rejects(timed.runAttempt(params({ timeoutMs: 1500 })), refusedAs("HarnessUnavailable", "harness"));
    assert.deepEqual(second.sleeps, [1000], "a second wait would end after the attempt's 1.5 s");
    assert.equal(lb.requests.length, 5);
  } finally {
    await lb.close();
  }
});

test("OpenClaw's abort during the wait fails the attempt with the refusal, and nothing is posted again", async () => {
  const lb = await startLoopback((_req, res) => refuse(res, { code: "RateLimited", message: "slow down", scope: "", retryable: true }, 429, "5"));
  try {
    const abort = new AbortController();
    // OpenClaw aborts during the wait; a sleep told of the abort ends with it.
    const { waiter, sleeps } = fakeWaiter(async (signal) => {
      abort.abort();
      if (signal?.aborted === true) throw signal.reason as Error;
    });
    await assert.rejects(createHarness(lb.config, { waiter }).runAttempt(params({ abortSignal: abort.signal })), refusedAs("RateLimited", undefined));
    assert.deepEqual(sleeps, [5000]);
    assert.equal(lb.requests.length, 1);
  } finally {
    await lb.close();
  }
});

test("a refusal that is not retryable is not posted again, whatever its Retry-After", async () => {
  const lb = await startLoopback((_req, res) => refuse(res, unsupported, 422, "1"));
  try {
    const { waiter, sleeps } = fakeWaiter();
    await assert.rejects(createHarness(lb.config, { waiter }).runAttempt(params()), refusedAs("HarnessUnsupported", undefined));
    assert.deepEqual(sleeps, []);
    assert.equal(lb.requests.length, 1);
  } finally {
    await lb.close();
  }
});

test("a turn the dispatcher claimed is never posted again, even when its failure is retryable", async () => {
  const lb = await startLoopback((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
    write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt" });
    write(res, 2, "error", { ...capacity, code: "HarnessUnavailable", replaySafe: true });
    res.end();
  });
  try {
    const { waiter, sleeps } = fakeWaiter();
    const result = await createHarness(lb.config, { waiter }).runAttempt(params());
    assert.ok("terminal" in result);
    assert.equal(result.terminal.kind, "failed");
    assert.deepEqual(sleeps, []);
    assert.equal(lb.requests.length, 1);
  } finally {
    await lb.close();
  }
});

test("a dropped stream whose resumption the dispatcher refuses for now is resumed after its Retry-After", async () => {
  let n = 0;
  const lb = await startLoopback((_req, res) => {
    switch (n++) {
      case 0:
        res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
        write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt" });
        res.write(`id: 2\nevent: partial\ndata: ${JSON.stringify({ itemId: "m", delta: "sun" })}\n\n`, () => res.destroy());
        return;
      case 1:
        refuse(res, { code: "AuthUnavailable", message: "the token review is unavailable", scope: "", retryable: true }, 503, "1");
        return;
      default:
        res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
        write(res, 3, "result", { assistantTexts: ["sunny"], terminal: { kind: "ok" } });
        res.end();
    }
  });
  try {
    const { waiter, sleeps } = fakeWaiter();
    const result = await createHarness(lb.config, { waiter }).runAttempt(params());
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.deepEqual(sleeps, [1000]);
    assert.equal(lb.requests.length, 3);
    assert.equal(lb.requests[2]?.headers["last-event-id"], "2", "resumed where the stream dropped");
    assert.equal(lb.requests[2]?.body, lb.requests[0]?.body, "the same body: the dispatcher replays, never re-runs");
  } finally {
    await lb.close();
  }
});
