import { test } from "node:test";
import assert from "node:assert/strict";

import { KubeClient } from "../src/kube.js";
import { SessionConflictError, SessionModelRefusedError, SessionStore, modelChange, sessionModel } from "../src/sessions.js";
import { startFakeKube, type FakeKube } from "./fake-kube.js";

const weather = { agentId: "main", sessionKey: "agent:main:weather", sessionId: "Weather:1" };
const PATH = "/apis/harness.openclaw.dev/v1alpha1/namespaces/agents/agentsessions";
const gpt55 = { model: "openai/gpt-5.5", locked: false };

async function withStore(fn: (store: SessionStore, kube: FakeKube) => Promise<void>): Promise<void> {
  const kube = await startFakeKube();
  try {
    await fn(new SessionStore(new KubeClient(kube.config.kubernetes), "agents"), kube);
  } finally {
    await kube.close();
  }
}

function seed(kube: FakeKube, name: string, spec: Record<string, unknown>, resourceVersion = "7"): void {
  kube.sessions.set(name, { metadata: { name, namespace: "agents", uid: `uid-${name}`, resourceVersion }, spec });
}

// raceFirstPatch makes another writer's reset land on name between the
// store's GET and its first PATCH: resourceVersion 8, resetGeneration 1.
function raceFirstPatch(kube: FakeKube, name: string): void {
  let raced = false;
  kube.beforeHandling = (req) => {
    const stored = kube.sessions.get(name);
    if (req.method !== "PATCH" || raced || stored === undefined) return;
    raced = true;
    stored.metadata.resourceVersion = "8";
    stored.spec["resetGeneration"] = 1;
  };
}

test("a session's first turn creates the AgentSession kubectl harness session create would write", async () => {
  await withStore(async (store, kube) => {
    assert.equal(await store.ensure(weather, gpt55), "weather-1");
    const post = kube.requests.find((r) => r.method === "POST");
    assert.equal(post?.path, PATH);
    // cmd/kubectl-harness/session.go runSessionCreate: the name from the id, and exactly these four spec fields.
    assert.deepEqual(JSON.parse(post?.body ?? "{}"), {
      apiVersion: "harness.openclaw.dev/v1alpha1",
      kind: "AgentSession",
      metadata: { name: "weather-1", namespace: "agents" },
      spec: { agentId: "main", sessionKey: "agent:main:weather", sessionId: "Weather:1", model: "openai/gpt-5.5" },
    });
    assert.equal(post?.headers["authorization"], "Bearer token-1");
  });
});

test("an existing AgentSession of the same OpenClaw session is used as it is, not written", async () => {
  await withStore(async (store, kube) => {
    seed(kube, "weather-1", { ...weather, model: "openai/gpt-5.5", resetGeneration: 2 });
    assert.equal(await store.ensure(weather, gpt55), "weather-1");
    assert.deepEqual(kube.requests.map((r) => r.method), ["GET"]);
  });
});

test("an AgentSession of the same name that belongs to another OpenClaw session is refused and left unchanged", async () => {
  await withStore(async (store, kube) => {
    // "weather:1" and "Weather:1" both name weather-1 (session-name.ts).
    const other = { agentId: "main", sessionKey: "agent:main:other", sessionId: "weather:1", model: "openai/gpt-5.5" };
    seed(kube, "weather-1", other);
    await assert.rejects(store.ensure(weather, gpt55), (err: unknown) => {
      assert.ok(err instanceof SessionConflictError);
      assert.match(err.message, /AgentSession agents\/weather-1 belongs to another OpenClaw session/);
      assert.match(err.message, /spec\.sessionKey is "agent:main:other", this session's is "agent:main:weather"/);
      assert.match(err.message, /spec\.sessionId is "weather:1", this session's is "Weather:1"/);
      return true;
    });
    await assert.rejects(store.reset({ sessionId: "Weather:1" }), SessionConflictError);
    await assert.rejects(store.delete(weather), SessionConflictError);
    assert.deepEqual(kube.sessions.get("weather-1")?.spec, other);
    assert.deepEqual(kube.requests.map((r) => r.method), ["GET", "GET", "GET"], "nothing written");
  });
});

test("a session created concurrently by another turn is found after AlreadyExists", async () => {
  await withStore(async (store, kube) => {
    // Another writer creates it between our GET (404) and our POST.
    kube.beforeHandling = (req) => {
      if (req.method === "POST") seed(kube, "weather-1", { ...weather, model: "openai/gpt-5.5" });
    };
    assert.equal(await store.ensure(weather, gpt55), "weather-1");
    assert.deepEqual(kube.requests.map((r) => r.method), ["GET", "POST", "GET"]);
  });
});

test("reset bumps spec.resetGeneration by one with a merge patch conditional on the resourceVersion it read", async () => {
  await withStore(async (store, kube) => {
    seed(kube, "weather-1", { ...weather, model: "openai/gpt-5.5", resetGeneration: 4 });
    assert.equal(await store.reset({ sessionId: "Weather:1", sessionKey: "agent:main:weather" }), true);
    const patch = kube.requests.find((r) => r.method === "PATCH");
    assert.equal(patch?.headers["content-type"], "application/merge-patch+json");
    assert.deepEqual(JSON.parse(patch?.body ?? "{}"), { metadata: { resourceVersion: "7" }, spec: { resetGeneration: 5 } });
    assert.equal(kube.sessions.get("weather-1")?.spec["resetGeneration"], 5);
  });
});

test("a reset that lost a race to another writer is retried on the new object, so neither bump is lost", async () => {
  await withStore(async (store, kube) => {
    seed(kube, "weather-1", { ...weather, model: "openai/gpt-5.5" });
    raceFirstPatch(kube, "weather-1");
    assert.equal(await store.reset({ sessionId: "Weather:1" }), true);
    assert.deepEqual(kube.requests.map((r) => r.method), ["GET", "PATCH", "GET", "PATCH"]);
    assert.equal(kube.sessions.get("weather-1")?.spec["resetGeneration"], 2, "the other writer's bump and ours");
  });
});

test("a reset of a session without an AgentSession changes nothing", async () => {
  await withStore(async (store, kube) => {
    assert.equal(await store.reset({ sessionId: "never-ran" }), false);
    assert.deepEqual(kube.requests.map((r) => r.method), ["GET"]);
  });
});

test("deleting a session deletes its AgentSession with the uid it read as a precondition", async () => {
  await withStore(async (store, kube) => {
    seed(kube, "weather-1", { ...weather, model: "openai/gpt-5.5" });
    assert.equal(await store.delete(weather), true);
    const del = kube.requests.find((r) => r.method === "DELETE");
    assert.equal(del?.path, `${PATH}/weather-1`);
    assert.deepEqual(JSON.parse(del?.body ?? "{}"), { apiVersion: "v1", kind: "DeleteOptions", preconditions: { uid: "uid-weather-1" } });
    assert.equal(kube.sessions.has("weather-1"), false);
    assert.equal(await store.delete(weather), false, "a second deletion finds nothing");
  });
});

test("an AgentSession refused by the API server reaches the caller with its reason and the field it names", async () => {
  await withStore(async (store, kube) => {
    kube.failNext("/agentsessions", 403, "Forbidden");
    await assert.rejects(store.ensure(weather, gpt55), /POST \/apis\/harness\.openclaw\.dev\/v1alpha1\/namespaces\/agents\/agentsessions: 403 Forbidden: injected Forbidden/);
  });
});

test("the session's model is provider/model, a repeated provider prefix kept once (selection SplitModel)", () => {
  const cases: Array<[string, string, string]> = [
    ["openai", "gpt-5.5", "openai/gpt-5.5"],
    ["openai", "openai/gpt-5.5", "openai/gpt-5.5"],
    ["OpenAI", "OPENAI/gpt-5.5", "openai/gpt-5.5"],
    ["openrouter", "anthropic/claude-sonnet-4", "openrouter/anthropic/claude-sonnet-4"],
  ];
  for (const [provider, model, want] of cases) assert.equal(sessionModel(provider, model), want, `${provider} ${model}`);
});

test("a session whose model changed gets spec.model updated before the turn, conditional on the resourceVersion it read", async () => {
  await withStore(async (store, kube) => {
    seed(kube, "weather-1", { ...weather, model: "openai/gpt-5.5", resetGeneration: 2 });
    assert.equal(await store.ensure(weather, { model: "openai/gpt-5.4", locked: false }), "weather-1");
    assert.deepEqual(kube.requests.map((r) => `${r.method} ${r.path}`), [`GET ${PATH}/weather-1`, `PATCH ${PATH}/weather-1`]);
    const patch = kube.requests.find((r) => r.method === "PATCH");
    assert.equal(patch?.headers["content-type"], "application/merge-patch+json");
    assert.deepEqual(JSON.parse(patch?.body ?? "{}"), { metadata: { resourceVersion: "7" }, spec: { model: "openai/gpt-5.4" } });
    assert.deepEqual(kube.sessions.get("weather-1")?.spec, { ...weather, model: "openai/gpt-5.4", resetGeneration: 2 }, "nothing else changed");
  });
});

test("a model update that lost a race to another writer is made again on the object it then reads", async () => {
  await withStore(async (store, kube) => {
    seed(kube, "weather-1", { ...weather, model: "openai/gpt-5.5" });
    raceFirstPatch(kube, "weather-1");
    await store.ensure(weather, { model: "openai/gpt-5.4", locked: false });
    assert.deepEqual(kube.requests.map((r) => r.method), ["GET", "PATCH", "GET", "PATCH"]);
    assert.deepEqual(kube.sessions.get("weather-1")?.spec, { ...weather, model: "openai/gpt-5.4", resetGeneration: 1 });
  });
});

test("a locked OpenClaw session creates a Locked AgentSession, and locks an existing one with the model it runs", async () => {
  await withStore(async (store, kube) => {
    await store.ensure(weather, { model: "openai/gpt-5.5", locked: true });
    assert.deepEqual(JSON.parse(kube.requests.find((r) => r.method === "POST")?.body ?? "{}").spec, {
      ...weather, model: "openai/gpt-5.5", modelSelectionLocked: "Locked",
    });
    const other = { agentId: "main", sessionKey: "agent:main:other", sessionId: "other" };
    seed(kube, "other", { ...other, model: "openai/gpt-5.5" });
    await store.ensure(other, { model: "openai/gpt-5.4", locked: true });
    assert.deepEqual(kube.sessions.get("other")?.spec, { ...other, model: "openai/gpt-5.4", modelSelectionLocked: "Locked" },
      "the model first, then the lock: one patch of an unlocked session");
  });
});

test("a Locked AgentSession refuses another model without a write, naming spec.modelSelectionLocked; the plugin never unlocks it", async () => {
  await withStore(async (store, kube) => {
    const spec = { ...weather, model: "openai/gpt-5.5", modelSelectionLocked: "Locked" };
    seed(kube, "weather-1", spec);
    await assert.rejects(store.ensure(weather, { model: "openai/gpt-5.4", locked: false }), (err: unknown) => {
      assert.ok(err instanceof SessionModelRefusedError);
      assert.match(err.message, /AgentSession agents\/weather-1: its model selection is Locked \(spec\.modelSelectionLocked\), so spec\.model "openai\/gpt-5\.5" cannot change to "openai\/gpt-5\.4"/);
      return true;
    });
    assert.equal(await store.ensure(weather, gpt55), "weather-1", "its own model runs, OpenClaw's session unlocked or not");
    assert.deepEqual(kube.requests.map((r) => r.method), ["GET", "GET"], "nothing written");
    assert.deepEqual(kube.sessions.get("weather-1")?.spec, spec);
  });
});

test("a model update the API server's admission refuses reaches the caller with the field and the API server's words", async () => {
  await withStore(async (store, kube) => {
    seed(kube, "weather-1", { ...weather, model: "openai/gpt-5.5" });
    // Locked by someone else between our read and our patch.
    kube.beforeHandling = (req) => {
      if (req.method === "PATCH") (kube.sessions.get("weather-1") as { spec: Record<string, unknown> }).spec["modelSelectionLocked"] = "Locked";
    };
    await assert.rejects(store.ensure(weather, { model: "openai/gpt-5.4", locked: false }), (err: unknown) => {
      assert.ok(err instanceof SessionModelRefusedError);
      assert.match(err.message, /updating AgentSession agents\/weather-1 \(spec\.model "openai\/gpt-5\.5" → "openai\/gpt-5\.4"\) was refused: /);
      assert.match(err.message, /422 Invalid: admission webhook denied the request: .*spec\.model: Forbidden: the session's model selection is Locked/);
      return true;
    });
    assert.equal(kube.sessions.get("weather-1")?.spec["model"], "openai/gpt-5.5");
  });
});

test("what a session's spec needs for an attempt's model and lock", () => {
  const cases: Array<[string, { model?: string; modelSelectionLocked?: string }, { model: string; locked: boolean }, ReturnType<typeof modelChange> | "refused"]> = [
    ["the same model", { model: "openai/gpt-5.5" }, gpt55, undefined],
    ["the same model id in another case (the dispatcher compares ids case-insensitively)", { model: "openai/GPT-5.5" }, gpt55, undefined],
    ["another model", { model: "openai/gpt-5.5" }, { model: "openai/gpt-5.4", locked: false }, { patch: { model: "openai/gpt-5.4" } }],
    ["another provider", { model: "openai/gpt-5.5" }, { model: "azure/gpt-5.5", locked: false }, { patch: { model: "azure/gpt-5.5" } }],
    ["an explicit Unlocked session", { model: "openai/gpt-5.5", modelSelectionLocked: "Unlocked" }, { model: "openai/gpt-5.4", locked: false }, { patch: { model: "openai/gpt-5.4" } }],
    ["a lock", { model: "openai/gpt-5.5" }, { model: "openai/gpt-5.5", locked: true }, { patch: { modelSelectionLocked: "Locked" } }],
    ["a lock and a model", { model: "openai/gpt-5.5" }, { model: "openai/gpt-5.4", locked: true }, { patch: { model: "openai/gpt-5.4", modelSelectionLocked: "Locked" } }],
    ["a Locked session on its model", { model: "openai/gpt-5.5", modelSelectionLocked: "Locked" }, { model: "openai/gpt-5.5", locked: true }, undefined],
    ["a Locked session, OpenClaw unlocked: never unlocked", { model: "openai/gpt-5.5", modelSelectionLocked: "Locked" }, gpt55, undefined],
    ["a Locked session on another model", { model: "openai/gpt-5.5", modelSelectionLocked: "Locked" }, { model: "openai/gpt-5.4", locked: true }, "refused"],
  ];
  for (const [name, spec, want, expected] of cases) {
    const got = modelChange(spec, want);
    if (expected === "refused") assert.ok(got !== undefined && "refused" in got, name);
    else assert.deepEqual(got, expected, name);
  }
});
