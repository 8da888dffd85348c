import { test } from "node:test";
import assert from "node:assert/strict";

import { SupportFacts } from "../src/support-facts.js";
import { type AttemptInput, turnRequest } from "../src/turn-request.js";

function attemptParams(extra: Record<string, unknown>): AttemptInput {
  return { runId: "run-1", sessionId: "s-1", prompt: "Say hello", ...extra } as AttemptInput;
}

// The facts OpenClaw 2026.9.6 handed supports() for the real-OpenClaw test's
// loopback provider (docs/openclaw-plugin.md "Route facts").
const told = {
  api: "openai-responses",
  baseUrl: "http://127.0.0.1:4000/v1",
  preparedAuth: { source: "direct" as const, mode: "api-key", requirement: "api-key" as const },
  requestTransportOverrides: "none" as const,
  endpointOverrides: "present" as const,
  runtimePolicy: { compatibleIds: ["openclaw"] },
};
const plan = {
  auth: {
    providerForAuth: "openai",
    authProfileProviderForAuth: "openai",
    selectedAuthMode: "api-key",
    modelRoute: { provider: "openai", modelId: "gpt-5.5", api: "openai-responses", baseUrl: "http://127.0.0.1:4000/v1", authRequirement: "api-key", requestTransportOverrides: "none", runtimePolicy: { compatibleIds: ["openclaw"] } },
  },
};

test("the endpointOverrides OpenClaw told supports() reaches the dispatcher with the attempt of exactly those facts", () => {
  const facts = new SupportFacts();
  facts.remember({ provider: "openai", modelId: "gpt-5.5", modelProvider: told });
  const body = turnRequest(attemptParams({ provider: "openai", modelId: "gpt-5.5", model: { api: "openai-responses", baseUrl: "http://127.0.0.1:4000/v1" }, runtimePlan: plan }), { supportFacts: facts });
  assert.deepEqual(body.modelProvider, told);
});

test("a route supports() was not asked about gets no endpointOverrides: nothing is filled in", () => {
  const facts = new SupportFacts();
  facts.remember({ provider: "openai", modelId: "gpt-5.5", modelProvider: { ...told, runtimePolicy: { compatibleIds: ["codex"] } } });
  facts.remember({ provider: "openai", modelId: "gpt-5.4", modelProvider: told });
  const { preparedAuth: _p, ...unauthorized } = told;
  facts.remember({ provider: "openai", modelId: "gpt-5.5", modelProvider: unauthorized });
  const { endpointOverrides: _e, ...route } = told;
  assert.equal(facts.endpointOverrides("openai", "gpt-5.5", route), undefined);
  const body = turnRequest(attemptParams({ provider: "openai", modelId: "gpt-5.5", model: { api: "openai-responses", baseUrl: "http://127.0.0.1:4000/v1" }, runtimePlan: plan }), { supportFacts: facts });
  assert.equal(body.modelProvider?.endpointOverrides, undefined);
});

test("the latest answer for a route wins, and the memory is bounded", () => {
  const facts = new SupportFacts();
  const { endpointOverrides: _e, ...route } = told;
  facts.remember({ provider: "openai", modelId: "gpt-5.5", modelProvider: told });
  facts.remember({ provider: "openai", modelId: "gpt-5.5", modelProvider: { ...told, endpointOverrides: "none" } });
  assert.equal(facts.endpointOverrides("openai", "gpt-5.5", route), "none");
  for (let i = 0; i < 600; i++) facts.remember({ provider: "openai", modelId: `m-${i}`, modelProvider: told });
  assert.equal(facts.endpointOverrides("openai", "gpt-5.5", route), undefined, "the oldest route was forgotten");
  assert.equal(facts.endpointOverrides("openai", "m-599", route), "present");
});
