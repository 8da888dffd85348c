import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentHarnessPreflightError, type AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import { createHarness } from "../src/harness.js";
import { sse } from "./loopback.js";
import { startFakeKube, type FakeKube } from "./fake-kube.js";
import { fakeHost } from "./host.js";

const SESSION = "/apis/harness.openclaw.dev/v1alpha1/namespaces/agents/agentsessions/weather-1";

function params(): AgentHarnessAttemptParamsV2 {
  return {
    runId: "gw-weather-0001", sessionId: "Weather:1", sessionKey: "agent:main:weather", agentId: "main",
    provider: "openai", modelId: "gpt-5.5", prompt: "What is the weather in Paris?", thinkLevel: "off", timeoutMs: 60000,
    hostCapabilities: fakeHost().caps,
  } as unknown as AgentHarnessAttemptParamsV2;
}

// The dispatcher's side: every turn ends at once.
async function withCluster(fn: (kube: FakeKube) => Promise<void>): Promise<void> {
  const kube = await startFakeKube((_req, res) =>
    sse(res, [
      [1, "selected", { runId: "gw-weather-0001", turnToken: "tt", harnessId: "codex", runtime: "codex" }],
      [2, "result", { runId: "gw-weather-0001", assistantTexts: ["18°C"], terminal: { kind: "ok" } }],
    ], "gw-weather-0001"),
  );
  try {
    await fn(kube);
  } finally {
    await kube.close();
  }
}

test("runAttempt creates the session's AgentSession before it sends the turn", async () => {
  await withCluster(async (kube) => {
    const harness = createHarness(kube.config);
    const result = await harness.runAttempt(params());
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.deepEqual(kube.requests.map((r) => `${r.method} ${r.path}`), [
      `GET ${SESSION}`,
      "POST /apis/harness.openclaw.dev/v1alpha1/namespaces/agents/agentsessions",
      "POST /v1/namespaces/agents/agentsessions/weather-1/turns",
    ]);
    assert.deepEqual(kube.sessions.get("weather-1")?.spec, { agentId: "main", sessionKey: "agent:main:weather", sessionId: "Weather:1", model: "openai/gpt-5.5" });
  });
});

test("a turn whose AgentSession belongs to another OpenClaw session fails before the dispatcher, as a preflight error without scope", async () => {
  await withCluster(async (kube) => {
    const other = { agentId: "main", sessionKey: "agent:main:other", sessionId: "weather:1", model: "openai/gpt-5.5" };
    kube.sessions.set("weather-1", { metadata: { name: "weather-1", namespace: "agents", uid: "u", resourceVersion: "3" }, spec: other });
    const harness = createHarness(kube.config);
    await assert.rejects(harness.runAttempt(params()), (err: unknown) => {
      assert.ok(err instanceof AgentHarnessPreflightError);
      assert.equal(err.scope, undefined, "no other runtime may take the turn");
      assert.match(err.message, /could not create or find the session's AgentSession: AgentSession agents\/weather-1 belongs to another OpenClaw session/);
      return true;
    });
    assert.ok(!kube.requests.some((r) => r.path.startsWith("/v1/")), "no turn was sent");
    assert.deepEqual(kube.sessions.get("weather-1")?.spec, other);
  });
});

test("a turn on another model (/model, a fallback model) updates the AgentSession's spec.model before the turn is sent", async () => {
  await withCluster(async (kube) => {
    const spec = { agentId: "main", sessionKey: "agent:main:weather", sessionId: "Weather:1", model: "openai/gpt-5.5" };
    kube.sessions.set("weather-1", { metadata: { name: "weather-1", namespace: "agents", uid: "u", resourceVersion: "3" }, spec });
    const harness = createHarness(kube.config);
    const result = await harness.runAttempt({ ...params(), modelId: "gpt-5.4" });
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.deepEqual(kube.requests.map((r) => `${r.method} ${r.path}`), [
      `GET ${SESSION}`,
      `PATCH ${SESSION}`,
      "POST /v1/namespaces/agents/agentsessions/weather-1/turns",
    ]);
    assert.deepEqual(kube.sessions.get("weather-1")?.spec, { ...spec, model: "openai/gpt-5.4" });
  });
});

test("a model-locked OpenClaw session locks its AgentSession", async () => {
  await withCluster(async (kube) => {
    const harness = createHarness(kube.config);
    await harness.runAttempt({ ...params(), modelSelectionLocked: true });
    assert.equal(kube.sessions.get("weather-1")?.spec["modelSelectionLocked"], "Locked");
  });
});

test("a model a Locked AgentSession cannot take fails before the dispatcher, as a preflight error scoped to the harness", async () => {
  await withCluster(async (kube) => {
    const spec = { agentId: "main", sessionKey: "agent:main:weather", sessionId: "Weather:1", model: "openai/gpt-5.5", modelSelectionLocked: "Locked" };
    kube.sessions.set("weather-1", { metadata: { name: "weather-1", namespace: "agents", uid: "u", resourceVersion: "3" }, spec });
    const harness = createHarness(kube.config);
    await assert.rejects(harness.runAttempt({ ...params(), modelId: "gpt-5.4" }), (err: unknown) => {
      assert.ok(err instanceof AgentHarnessPreflightError);
      assert.equal(err.scope, "harness", "another model here meets the same lock; another runtime's candidate may run");
      assert.match(err.message, /could not give the session's AgentSession this model: .*spec\.modelSelectionLocked/);
      return true;
    });
    assert.ok(!kube.requests.some((r) => r.path.startsWith("/v1/")), "no turn was sent");
    assert.deepEqual(kube.sessions.get("weather-1")?.spec, spec);
  });
});

test("OpenClaw's reset bumps the AgentSession's resetGeneration; a compaction keeps the native thread", async () => {
  await withCluster(async (kube) => {
    const harness = createHarness(kube.config);
    await harness.runAttempt(params());
    await harness.reset?.({ sessionId: "Weather:1", sessionKey: "agent:main:weather", reason: "compaction" });
    assert.equal(kube.sessions.get("weather-1")?.spec["resetGeneration"], undefined);
    await harness.reset?.({ sessionId: "Weather:1", sessionKey: "agent:main:weather", reason: "reset" });
    assert.equal(kube.sessions.get("weather-1")?.spec["resetGeneration"], 1);
  });
});

test("deleting the OpenClaw session deletes its AgentSession after the deletion commits, and a rollback deletes nothing", async () => {
  await withCluster(async (kube) => {
    const harness = createHarness(kube.config);
    await harness.runAttempt(params());
    const target = { agentId: "main", sessionKey: "agent:main:weather", sessionId: "Weather:1", assertCurrent: () => undefined };
    assert.ok(harness.withSessionDeletion !== undefined);
    const rolledBack = await harness.withSessionDeletion(target, async (m) => {
      m.commit();
      m.rollback();
      return "rolled back";
    });
    assert.equal(rolledBack, "rolled back");
    assert.ok(kube.sessions.has("weather-1"));
    let existedAtCommit = false;
    await harness.withSessionDeletion(target, async (m) => {
      m.commit();
      existedAtCommit = kube.sessions.has("weather-1");
    });
    assert.ok(existedAtCommit, "nothing is deleted before the session's commit completes");
    assert.equal(kube.sessions.has("weather-1"), false);
  });
});

test("a failed AgentSession deletion after the commit is reported, not thrown into OpenClaw's finished deletion", async () => {
  await withCluster(async (kube) => {
    const warnings: string[] = [];
    const harness = createHarness(kube.config, { logger: { warn: (m) => void warnings.push(m) } });
    await harness.runAttempt(params());
    kube.failNext("/agentsessions/weather-1", 403, "Forbidden");
    await harness.withSessionDeletion?.({ agentId: "main", sessionKey: "agent:main:weather", sessionId: "Weather:1", assertCurrent: () => undefined }, async (m) => m.commit());
    assert.equal(warnings.length, 1);
    assert.match(warnings[0] ?? "", /the AgentSession of deleted session Weather:1 was not deleted: .*403 Forbidden/);
  });
});
