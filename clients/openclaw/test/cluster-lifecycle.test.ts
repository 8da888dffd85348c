import { test } from "node:test";
import assert from "node:assert/strict";

import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import { createHarness } from "../src/harness.js";
import { memoryMarkers } from "../src/transcript-marker.js";
import { startFakeKube } from "./fake-kube.js";
import { fakeHost } from "./host.js";
import { sse } from "./loopback.js";

function params(prompt: string): AgentHarnessAttemptParamsV2 {
  return {
    runId: `run-${prompt}`, sessionId: "Weather:1", sessionKey: "agent:main:weather", agentId: "main",
    provider: "openai", modelId: "gpt-5.5", model: { api: "openai-responses" }, prompt, thinkLevel: "off", timeoutMs: 60000,
    hostCapabilities: fakeHost().caps,
  } as unknown as AgentHarnessAttemptParamsV2;
}

const cut = { agentId: "main", sessionKey: "agent:main:weather", sessionId: "Weather:1", assertCurrent: () => undefined };

test("a history cut that commits resets the AgentSession's thread and the next turn gives the new thread the history OpenClaw kept; a rolled-back cut changes nothing", async () => {
  const kube = await startFakeKube((req, res) => {
    const { runId } = JSON.parse(req.body) as { runId: string };
    sse(res, [[1, "selected", { runId, turnToken: "tt" }], [2, "result", { runId, assistantTexts: ["ok"], terminal: { kind: "ok" } }]], runId);
  });
  try {
    // OpenClaw's transcript after the cut: the first exchange kept, the
    // second one cut away; then the prompt of the next turn.
    const kept = [
      { role: "user" as const, text: "capital of France?", timestamp: 1000 },
      { role: "assistant" as const, text: "Paris.", timestamp: 1500 },
    ];
    const reads: number[] = [];
    const readConversation = async (q: { minTimestampMs: number }) => {
      reads.push(q.minTimestampMs);
      return [...kept, { role: "user" as const, text: "and its population?", timestamp: 9000 }].filter((m) => m.timestamp >= q.minTimestampMs);
    };
    const harness = createHarness(kube.config, { markers: memoryMarkers(), readConversation, now: () => 5000 });
    await harness.runAttempt(params("capital of France?"));
    const first = JSON.parse(kube.requests.find((r) => r.path.endsWith("/turns"))?.body ?? "{}") as { runId: string };

    await harness.withSessionContextReset?.(cut, async (m) => m.rollback());
    assert.equal(kube.sessions.get("weather-1")?.spec["resetGeneration"], undefined, "a rolled-back cut keeps the thread");

    const result = await harness.withSessionContextReset?.(cut, async (m) => {
      m.commit();
      return "cut";
    });
    assert.equal(result, "cut", "OpenClaw's mutation result is returned");
    assert.equal(kube.sessions.get("weather-1")?.spec["resetGeneration"], 1);

    await harness.runAttempt(params("and its population?"));
    const turns = kube.requests.filter((r) => r.path.endsWith("/turns"));
    const next = JSON.parse(turns.at(-1)?.body ?? "{}") as { gatewayTranscript?: unknown };
    assert.deepEqual(next.gatewayTranscript, {
      afterRunId: first.runId,
      messages: [{ role: "user", text: "capital of France?" }, { role: "assistant", text: "Paris." }],
    });
    assert.equal(reads.at(-1), 0, "the whole transcript OpenClaw kept is read");
  } finally {
    await kube.close();
  }
});

test("a history cut of a session that never ran on the cluster writes nothing", async () => {
  const kube = await startFakeKube();
  try {
    const harness = createHarness(kube.config, { markers: memoryMarkers() });
    await harness.withSessionContextReset?.(cut, async (m) => m.commit());
    assert.deepEqual(kube.requests.map((r) => r.method), ["GET"]);
  } finally {
    await kube.close();
  }
});

test("runtimeArtifact.validate holds only for the artifact an attested AgentHarness of the cluster publishes", async () => {
  const kube = await startFakeKube();
  const art = { id: "ghcr.io/openclaw/codex@sha256:ab#0.169.0", fingerprint: "sha256:ab" };
  const attested = [{ type: "Attested", status: "True" }];
  try {
    const harness = createHarness(kube.config);
    const validate = harness.runtimeArtifact?.validate;
    assert.ok(validate !== undefined, "the harness offers the capability");
    const cases: Array<{ name: string; harnesses: object[]; want: boolean }> = [
      { name: "attested, same artifact", harnesses: [{ status: { conditions: attested, runtimeArtifact: art } }], want: true },
      { name: "attested, another fingerprint", harnesses: [{ status: { conditions: attested, runtimeArtifact: { ...art, fingerprint: "sha256:cd" } } }], want: false },
      { name: "same artifact, not attested", harnesses: [{ status: { conditions: [{ type: "Attested", status: "False" }], runtimeArtifact: art } }], want: false },
      { name: "no harness", harnesses: [], want: false },
    ];
    for (const c of cases) {
      kube.harnesses.splice(0, kube.harnesses.length, ...c.harnesses);
      assert.equal(await validate(art), c.want, c.name);
    }
  } finally {
    await kube.close();
  }
});

test("without a kubernetes block the harness cannot attest an artifact or cut a thread, and says so by offering neither", () => {
  const harness = createHarness({ dispatcherUrl: "https://127.0.0.1:9", tokenFile: "/nonexistent", namespace: "agents", routes: [] });
  assert.equal(harness.runtimeArtifact, undefined);
  assert.equal(harness.withSessionContextReset, undefined);
});
