import { test } from "node:test";
import assert from "node:assert/strict";

import { ConfigError, parseConfig } from "../src/config.js";

const base = { dispatcherUrl: "https://dispatcher:8443", tokenFile: "/var/run/secrets/harness/token", namespace: "agents" };
const inPod = { KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" };

test("in a Pod the kubernetes block defaults to the Pod's ServiceAccount and the in-cluster API server", () => {
  assert.deepEqual(parseConfig(base, inPod).kubernetes, {
    server: "https://10.96.0.1", // the URL drops the default port
    caFile: "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
    tokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token",
    refreshSeconds: 30,
  });
  assert.equal(parseConfig(base, { KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "6443" }).kubernetes?.server, "https://[fd00::1]:6443");
  const own = parseConfig({ ...base, kubernetes: { tokenFile: "/var/run/secrets/kube/token", refreshSeconds: 5 } }, inPod).kubernetes;
  assert.equal(own?.tokenFile, "/var/run/secrets/kube/token");
  assert.equal(own?.refreshSeconds, 5);
});

test("outside a cluster without a kubernetes block the plugin makes no Kubernetes calls", () => {
  assert.equal(parseConfig(base, {}).kubernetes, undefined);
});

test("outside a cluster a configured kubernetes block names its server and token file", () => {
  const k = parseConfig({ ...base, kubernetes: { server: "https://127.0.0.1:6443/", caFile: "/tmp/ca.pem", tokenFile: "/tmp/t" } }, {}).kubernetes;
  assert.deepEqual(k, { server: "https://127.0.0.1:6443", caFile: "/tmp/ca.pem", tokenFile: "/tmp/t", refreshSeconds: 30 });
});

test("each kubernetes block mistake is refused naming its field", () => {
  const cases: Array<[string, unknown, NodeJS.ProcessEnv, string]> = [
    ["no server outside a cluster", { tokenFile: "/t" }, {}, "kubernetes.server"],
    ["no token file outside a cluster", { server: "https://127.0.0.1:6443" }, {}, "kubernetes.tokenFile"],
    ["plain http", { server: "http://127.0.0.1:6443", tokenFile: "/t" }, {}, "kubernetes.server"],
    ["not an object", "in-cluster", inPod, "kubernetes"],
    ["unknown field", { token: "abc" }, inPod, "kubernetes.token"],
    ["refresh of zero", { refreshSeconds: 0 }, inPod, "kubernetes.refreshSeconds"],
    ["refresh not whole", { refreshSeconds: 1.5 }, inPod, "kubernetes.refreshSeconds"],
    ["empty CA file", { caFile: "" }, inPod, "kubernetes.caFile"],
  ];
  for (const [name, kubernetes, env, field] of cases) {
    assert.throws(() => parseConfig({ ...base, kubernetes }, env), (err: unknown) => {
      assert.ok(err instanceof ConfigError, name);
      assert.equal(err.field, field, name);
      return true;
    });
  }
});
