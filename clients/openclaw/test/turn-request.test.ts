import { test } from "node:test";
import assert from "node:assert/strict";

import { type AttemptInput, turnRequest } from "../src/turn-request.js";

const base = {
  runId: "run-1", sessionId: "3f6d2a9e", sessionKey: "agent:main:demo", agentId: "main",
  provider: "openai", modelId: "gpt-5.5", prompt: "Say hello", thinkLevel: "medium", timeoutMs: 120000,
} as AttemptInput;

test("the turn repeats the session's identity and carries the prepared prompt, think level and timeout", () => {
  assert.deepEqual(turnRequest(base), {
    runId: "run-1", sessionId: "3f6d2a9e", sessionKey: "agent:main:demo", agentId: "main",
    provider: "openai", modelId: "gpt-5.5", prompt: "Say hello", thinkLevel: "medium", timeoutMs: 120000,
  });
});

test("OpenClaw's own harness pin and runtime override never reach the cluster", () => {
  const withPin = { ...base, agentHarnessId: "harness-operator", agentHarnessRuntimeOverride: "harness-operator" } as AttemptInput;
  const body = turnRequest(withPin) as Record<string, unknown>;
  assert.equal(body["agentHarnessId"], undefined);
  assert.equal(body["agentHarnessRuntimeOverride"], undefined);
});

test("images become data URLs and a timeout beyond the dispatcher's bound is capped to it", () => {
  const body = turnRequest({ ...base, timeoutMs: 10 ** 12, images: [{ type: "image", data: "AAAA", mimeType: "image/png" }] } as AttemptInput);
  assert.deepEqual(body.images, [{ url: "data:image/png;base64,AAAA" }]);
  assert.equal(body.timeoutMs, 86_400_000);
});
