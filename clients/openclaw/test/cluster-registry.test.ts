import { test } from "node:test";
import assert from "node:assert/strict";

import { ClusterRegistry, harnessVisible, matches } from "../src/cluster-registry.js";
import type { AgentHarness } from "../src/cluster-types.js";
import { KubeClient } from "../src/kube.js";
import { startFakeKube, type FakeKube } from "./fake-kube.js";

const official = { api: "openai-responses", baseUrl: "https://api.openai.com/v1", requestTransportOverrides: "none" as const, runtimePolicy: { compatibleIds: ["codex"] } };

function harness(namespace: string, name: string, allowedNamespaces?: AgentHarness["spec"]["allowedNamespaces"]): AgentHarness {
  const h: AgentHarness = { metadata: { name, namespace }, spec: { adapter: "codex-app-server" } };
  if (allowedNamespaces !== undefined) h.spec.allowedNamespaces = allowedNamespaces;
  return h;
}

async function withRegistry(fn: (kube: FakeKube, registry: ClusterRegistry, clock: { now: number }) => Promise<void>): Promise<void> {
  const kube = await startFakeKube();
  const clock = { now: 1_000_000 };
  const registry = new ClusterRegistry(new KubeClient(kube.config.kubernetes), "agents", 30_000, { now: () => clock.now });
  try {
    await fn(kube, registry, clock);
  } finally {
    registry.stop();
    await kube.close();
  }
}

test("a harness is visible to the gateway's namespace only when it admits the namespace and the namespace consents (visibility.go HarnessVisible)", () => {
  const labels = { "kubernetes.io/metadata.name": "agents", team: "a" };
  const consenting = { ...labels, "accept.harness.openclaw.dev/pools": "true" };
  const rows: Array<[string, AgentHarness, Record<string, string>, boolean]> = [
    ["own namespace, default Same", harness("agents", "h"), labels, true],
    ["other namespace, default Same", harness("pools", "h"), consenting, false],
    ["other namespace, All, no consent label", harness("pools", "h", { from: "All" }), labels, false],
    ["other namespace, All, consent label", harness("pools", "h", { from: "All" }), consenting, true],
    ["Selector matching, consent label", harness("pools", "h", { from: "Selector", selector: { matchLabels: { team: "a" } } }), consenting, true],
    ["Selector not matching", harness("pools", "h", { from: "Selector", selector: { matchExpressions: [{ key: "team", operator: "NotIn", values: ["a"] }] } }), consenting, false],
    ["Selector without a selector admits nothing", harness("agents", "h", { from: "Selector" }), labels, false],
    ["a mode this build does not know admits nothing", harness("agents", "h", { from: "Everywhere" }), labels, false],
  ];
  for (const [name, h, nsLabels, want] of rows) assert.equal(harnessVisible(h, "agents", nsLabels), want, name);
});

test("an invalid label selector is an error naming its field, never a silent match", () => {
  assert.throws(() => matches({ matchExpressions: [{ key: "team", operator: "Like" }] }, {}, "RuntimePolicy p: spec.namespaceSelector"), /RuntimePolicy p: spec\.namespaceSelector: unknown operator "Like"/);
  assert.throws(() => matches({ matchExpressions: [{ key: "team", operator: "In" }] }, {}, "f"), /f: operator In needs values/);
});

test("a refresh keeps the harnesses visible to the namespace and the policies selecting it, and supports() predicts from them", async () => {
  await withRegistry(async (kube, registry) => {
    kube.namespaceLabels = { team: "a" };
    kube.harnesses = [harness("agents", "codex"), harness("pools", "codex-pool", { from: "All" })];
    kube.policies = [
      { metadata: { name: "other-team" }, spec: { namespaceSelector: { matchLabels: { team: "b" } }, providers: [{ provider: "openai", runtime: "openclaw" }] } },
      // The API server's own label selects by name even when the object's labels were read without it.
      { metadata: { name: "ours" }, spec: { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "agents" } }, providers: [{ provider: "openai", runtime: "codex" }] } },
    ];
    await registry.refresh();
    const view = registry.view();
    assert.equal(view.state, "fresh");
    assert.ok(view.state === "fresh");
    assert.deepEqual(view.harnesses.map((h) => h.metadata.name), ["codex"], "pools has no consent label");
    assert.deepEqual(view.policies.map((p) => p.metadata.name), ["ours"]);
    assert.deepEqual(registry.supports({ provider: "openai", modelId: "gpt-5.5", modelProvider: official }), {
      supported: true,
      priority: 100,
      reason: 'harness-operator: the cluster would run openai/gpt-5.5 on agent harness "codex" (forced_plugin: RuntimePolicy ours)',
    });
  });
});

test("before its first read, and once its snapshot is older than three intervals, the registry defers to the dispatcher", async () => {
  await withRegistry(async (kube, registry, clock) => {
    assert.match(registry.view().state, /^empty$/);
    kube.harnesses = [harness("agents", "codex")];
    await registry.refresh();
    clock.now += 90_000;
    assert.equal(registry.view().state, "fresh", "three intervals old is still fresh");
    kube.failNext("/runtimepolicies", 403, "Forbidden");
    await assert.rejects(registry.refresh(), /403 Forbidden/);
    assert.equal(registry.view().state, "fresh", "a failed refresh keeps the last snapshot");
    clock.now += 1;
    const stale = registry.view();
    assert.equal(stale.state, "stale");
    assert.ok(stale.state === "stale");
    assert.match(stale.detail, /^last read 90 s ago; last error: .*403 Forbidden: injected Forbidden$/);
  });
});

test("an invalid selector fails the refresh and keeps the last snapshot (snapshot.go SnapshotFor)", async () => {
  await withRegistry(async (kube, registry) => {
    kube.harnesses = [harness("agents", "codex")];
    await registry.refresh();
    kube.harnesses = [];
    kube.policies = [{ metadata: { name: "broken" }, spec: { namespaceSelector: { matchExpressions: [{ key: "x", operator: "Like" }] } } }];
    await assert.rejects(registry.refresh(), /RuntimePolicy broken: spec\.namespaceSelector: unknown operator/);
    const view = registry.view();
    assert.ok(view.state === "fresh");
    assert.deepEqual(view.harnesses.map((h) => h.metadata.name), ["codex"]);
  });
});

test("the first supports() question starts the background refresh, which retries after a failure until it succeeds", async () => {
  const kube = await startFakeKube();
  const results: Array<string | undefined> = [];
  let succeeded: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (succeeded = resolve));
  const registry = new ClusterRegistry(new KubeClient(kube.config.kubernetes), "agents", 30_000, {
    onRefresh: (err) => {
      results.push(err?.message);
      if (err === undefined) succeeded();
    },
  });
  try {
    kube.harnesses = [harness("agents", "codex")];
    kube.failNext("/agentharnesses", 500, "InternalError");
    assert.equal(kube.requests.length, 0, "loading the plugin reads nothing");
    const first = registry.supports({ provider: "openai", modelId: "gpt-5.5", modelProvider: official });
    assert.match(first.reason ?? "", /the cluster registry is empty \(not read yet\); the dispatcher decides/);
    assert.equal(first.supported, true);
    await done;
    assert.equal(results.length, 2);
    assert.match(results[0] ?? "", /500 InternalError/);
    assert.equal(results[1], undefined);
    assert.match(registry.supports({ provider: "openai", modelId: "gpt-5.5", modelProvider: official }).reason ?? "", /on agent harness "codex"/);
  } finally {
    registry.stop();
    await kube.close();
  }
});
