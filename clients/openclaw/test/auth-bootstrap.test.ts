import { test } from "node:test";
import assert from "node:assert/strict";

import { prepareAgentRuntimeAuth } from "openclaw/plugin-sdk/agent-harness-runtime";

import { createHarness, HARNESS_ID } from "../src/harness.js";

const config = { dispatcherUrl: "https://127.0.0.1:9", tokenFile: "/nonexistent", namespace: "agents", routes: [] };

// What the registration's authBootstrap: "harness" buys on a gateway with no
// OpenAI credential at all (no provider entry, no auth profile, no
// environment), asked of OpenClaw's own preparation of an attempt's auth
// (prepareAgentRuntimeAuth, which its runner calls with the selected
// harness's id and authBootstrap before it calls the harness). OpenClaw
// 2026.9.6 defers an openai/* route to a harness-owned login only when the
// harness id is "codex"; this plugin's harness gets the route refused, so
// docs/openclaw-plugin.md ("A worked OpenClaw config") keeps a placeholder
// key. When an OpenClaw release changes either answer this test fails, and
// that config can change with it.
test("OpenClaw 2026.9.6 defers a keyless openai route to the registration's harness-owned auth only under the harness id codex", () => {
  const harness = createHarness(config);
  const bootstrap = harness.authBootstrap === undefined ? {} : { harnessAuthBootstrap: harness.authBootstrap };
  const keyless = {
    provider: "openai",
    modelId: "gpt-5.5",
    modelApi: "openai-responses",
    modelBaseUrl: "https://api.openai.com/v1",
    config: {},
    env: {},
    authProfileStore: { version: 1, profiles: {} },
  };
  const refused = /No route-compatible authentication source is configured for openai\./;

  // The control: the same attempt and declaration under OpenClaw's own
  // Codex harness id is left to the harness, with the route support the
  // plugin sends as the turn's route facts (route-facts.ts).
  const codex = prepareAgentRuntimeAuth({ ...keyless, ...bootstrap, harnessId: "codex", harnessRuntime: "codex" });
  assert.deepEqual(codex.plan.deferredRouteSupport, { requestTransportOverrides: "none", runtimePolicy: { compatibleIds: ["openclaw", "codex"] } });
  assert.equal(codex.plan.harnessAuthProvider, "openai");
  assert.deepEqual(codex.attempts.map((a) => a.kind), ["implicit"]);

  // Without the declaration even codex needs a credential.
  assert.throws(() => prepareAgentRuntimeAuth({ ...keyless, harnessId: "codex", harnessRuntime: "codex" }), refused);

  // This plugin's harness, declaration and all: refused before it is called.
  assert.throws(() => prepareAgentRuntimeAuth({ ...keyless, ...bootstrap, harnessId: HARNESS_ID, harnessRuntime: HARNESS_ID }), refused);
  harness.dispose?.();
});
