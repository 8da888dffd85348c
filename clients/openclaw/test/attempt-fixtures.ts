// What the attempt tests share: OpenClaw's prepared attempt as the plugin
// gets it, and a promise the test settles when it observed something.
import type { TestContext } from "node:test";

import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import { fakeHost } from "./host.js";
import type { Loopback } from "./loopback.js";

export function attemptParams(extra: Record<string, unknown> = {}): AgentHarnessAttemptParamsV2 {
  return {
    runId: "gw-weather-0001", sessionId: "Weather:1", sessionKey: "agent:main:weather", agentId: "main",
    provider: "openai", modelId: "gpt-5.5", prompt: "What is the weather in Paris?", thinkLevel: "off", timeoutMs: 60000,
    hostCapabilities: fakeHost().caps,
    ...extra,
  } as unknown as AgentHarnessAttemptParamsV2;
}

export type Deferred<T = void> = { promise: Promise<T>; resolve(value: T): void };

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * Closes the loopback dispatcher when the test times out: an attempt that
 * waits for ever (the failure such a test looks for) then ends with its
 * connection instead of keeping the test process alive.
 */
export function closeWhenCancelled(t: TestContext, lb: Loopback): void {
  t.signal.addEventListener("abort", () => void lb.close(), { once: true });
}
