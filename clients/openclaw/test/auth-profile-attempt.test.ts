import { test } from "node:test";
import assert from "node:assert/strict";

import { createHarness } from "../src/harness.js";
import { attemptParams as params } from "./attempt-fixtures.js";
import { startLoopback, write } from "./loopback.js";

const KEY = "sk-attempt-profile-key-5e02";

// startTurnServer is a loopback dispatcher whose every turn is selected on
// codex and ends with one answer.
function startTurnServer() {
  return startLoopback((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
    write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt", harnessId: "codex", runtime: "codex" });
    write(res, 2, "result", { runId: "gw-weather-0001", assistantTexts: ["done"], terminal: { kind: "ok" }, agentHarnessId: "codex" });
    res.end();
  });
}

// The whole attempt: OpenClaw forwards a profile, the plugin resolves its
// key and posts it inline with the turn; the key is in nothing the plugin
// logs or returns, and not in the runId the cluster shows.
test("an attempt with a forwarded auth profile posts its key inline with the turn and logs nothing of it", { timeout: 30_000 }, async () => {
  const lb = await startTurnServer();
  try {
    const logged: string[] = [];
    const logger = { warn: (m: string) => void logged.push(m), info: (m: string) => void logged.push(m), debug: (m: string) => void logged.push(m), error: (m: string) => void logged.push(m) };
    const harness = createHarness(lb.config, { logger });
    const result = await harness.runAttempt(params({
      runtimePlan: { auth: { providerForAuth: "openai", authProfileProviderForAuth: "openai", forwardedAuthProfileId: "openai:work", selectedAuthMode: "api-key" } },
      authProfileId: "openai:work", resolvedApiKey: KEY,
      authProfileStore: { version: 1, profiles: { "openai:work": { type: "api_key", provider: "openai", key: KEY } } },
    }));
    const sent = JSON.parse(lb.requests[0]?.body ?? "{}") as { runId: string; authProfile?: unknown };
    assert.deepEqual(sent.authProfile, { id: "openai:work", apiKey: KEY });
    assert.ok(!sent.runId.includes(KEY));
    assert.ok(!logged.some((m) => m.includes(KEY)), "the plugin logged the key");
    assert.ok(!JSON.stringify(result).includes(KEY), "the attempt's result holds the key");
  } finally {
    await lb.close();
  }
});

// The control: without a forwarded profile the turn carries none.
test("an attempt without a forwarded profile posts no authProfile", { timeout: 30_000 }, async () => {
  const lb = await startTurnServer();
  try {
    await createHarness(lb.config).runAttempt(params({ resolvedApiKey: KEY }));
    const sent = JSON.parse(lb.requests[0]?.body ?? "{}") as { authProfile?: unknown };
    assert.equal(sent.authProfile, undefined);
    assert.ok(!(lb.requests[0]?.body ?? "").includes(KEY));
  } finally {
    await lb.close();
  }
});
