import { test } from "node:test";
import assert from "node:assert/strict";

import { SupportRegistry } from "../src/registry.js";

test("supports answers synchronously in the harness SDK's shape, a model's entry before its provider's", () => {
  const registry = new SupportRegistry([
    { provider: "openai", supported: true, priority: 90 },
    { provider: "openai", model: "gpt-4o", supported: false, reason: "the cluster runs gpt-4o embedded", fallbackRuntime: "openclaw" },
    { provider: "anthropic", supported: false },
  ]);
  const cases: Array<[string, string | undefined, unknown]> = [
    ["openai", "gpt-5.5", { supported: true, priority: 90 }],
    ["openai", "gpt-4o", { supported: false, reason: "the cluster runs gpt-4o embedded", fallbackRuntime: "openclaw" }],
    ["anthropic", "claude-sonnet-4", { supported: false, reason: "harness-operator: the cluster does not run anthropic/claude-sonnet-4" }],
    ["google", "gemini", { supported: false, reason: "harness-operator: no cluster harness is known to serve google/gemini" }],
  ];
  for (const [provider, modelId, want] of cases) {
    const got = registry.supports(modelId === undefined ? { provider } : { provider, modelId });
    assert.ok(!(got instanceof Promise), "never a Promise: OpenClaw reads .supported directly");
    assert.deepEqual(got, want, `${provider}/${modelId}`);
  }
});

test("a refreshed registry answers from the new state at once", () => {
  const registry = new SupportRegistry([]);
  assert.equal(registry.supports({ provider: "openai", modelId: "gpt-5.5" }).supported, false);
  registry.replace([{ provider: "openai", supported: true }]);
  assert.deepEqual(registry.supports({ provider: "openai", modelId: "gpt-5.5" }), { supported: true, priority: 100 });
});
