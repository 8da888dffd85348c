import { test } from "node:test";
import assert from "node:assert/strict";

import type { AgentHarness, OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";

import { ClusterRegistry } from "../src/cluster-registry.js";
import entry from "../src/index.js";
import { startFakeKube } from "./fake-kube.js";

const REFRESH_MS = 30_000;

// OpenClaw 2026.9.6 retires a plugin instance (a config reload, the plugin
// disabled) and then refuses the harness's own dispose; what runs is the
// cleanup the instance's lifecycle (api.lifecycle.onDispose) collected. The
// registry's refreshes are counted (refresh stubbed) and its timers are
// node's mock timers, so every refresh there is, and none after retirement,
// is counted without waiting for a clock.
test("retiring the plugin's OpenClaw instance stops its cluster registry, which polled until then", async (t) => {
  const kube = await startFakeKube();
  t.after(() => kube.close());
  const refreshes = t.mock.method(ClusterRegistry.prototype, "refresh", async () => undefined);
  t.mock.timers.enable({ apis: ["setTimeout"] });

  const cleanups: Array<() => void | Promise<void>> = [];
  let harness: AgentHarness | undefined;
  const { kubernetes: kc } = kube.config;
  const api = {
    pluginConfig: {
      dispatcherUrl: kube.config.dispatcherUrl, caFile: kube.config.caFile, tokenFile: kube.config.tokenFile, namespace: "agents",
      kubernetes: { server: kc.server, caFile: kc.caFile, tokenFile: kc.tokenFile, refreshSeconds: REFRESH_MS / 1000 },
    },
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined, debug: () => undefined },
    lifecycle: {
      onDispose: (cleanup: () => void | Promise<void>) => {
        cleanups.push(cleanup);
        return () => undefined;
      },
      registerRuntimeLifecycle: () => undefined,
    },
    registerAgentHarness: (h: AgentHarness) => {
      harness = h;
    },
  } as unknown as OpenClawPluginApi;
  entry.register(api);
  assert.ok(harness !== undefined, "the plugin registered its harness");
  assert.equal(cleanups.length, 1, "the plugin gave its instance one cleanup");
  const ask = (): unknown => harness?.supports({ provider: "openai", modelId: "gpt-5.5", requestedRuntime: "harness-operator" } as never);

  // The first question starts the registry: a refresh at once, then one
  // every refreshSeconds.
  ask();
  t.mock.timers.tick(0);
  assert.equal(refreshes.mock.callCount(), 1);
  await new Promise(setImmediate); // the refresh settles and schedules the next
  t.mock.timers.tick(REFRESH_MS);
  assert.equal(refreshes.mock.callCount(), 2, "the registry polls every kubernetes.refreshSeconds");
  await new Promise(setImmediate);

  for (const cleanup of cleanups) await cleanup();
  t.mock.timers.tick(10 * REFRESH_MS);
  ask();
  t.mock.timers.tick(10 * REFRESH_MS);
  assert.equal(refreshes.mock.callCount(), 2, "no refresh once OpenClaw retired the instance, nor after a later question");
});
