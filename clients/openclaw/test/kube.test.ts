import { test } from "node:test";
import assert from "node:assert/strict";
import type { AddressInfo } from "node:net";
import { createServer } from "node:net";

import { ConfigError } from "../src/config.js";
import { KubeClient, KubeError } from "../src/kube.js";
import { jsonError, startLoopback } from "./loopback.js";
import { startFakeKube } from "./fake-kube.js";

test("every Kubernetes request reads the token file anew, so a rotated ServiceAccount token is used at once", async () => {
  const kube = await startFakeKube();
  try {
    const client = new KubeClient(kube.config.kubernetes);
    await client.get("/api/v1/namespaces/agents");
    kube.setToken("token-2\n");
    await client.get("/api/v1/namespaces/agents");
    assert.deepEqual(kube.requests.map((r) => r.headers["authorization"]), ["Bearer token-1", "Bearer token-2"]);
  } finally {
    await kube.close();
  }
});

test("an error answer carries the API server's Status reason and message, and names the server's config field", async () => {
  const kube = await startFakeKube();
  try {
    const client = new KubeClient(kube.config.kubernetes);
    await assert.rejects(client.get("/apis/harness.openclaw.dev/v1alpha1/namespaces/agents/agentsessions/nope"), (err: unknown) => {
      assert.ok(err instanceof KubeError);
      assert.equal(err.status, 404);
      assert.equal(err.reason, "NotFound");
      assert.match(err.message, /^Kubernetes API https:\/\/127\.0\.0\.1:\d+ \(kubernetes\.server\): GET \S+\/nope: 404 NotFound: agentsessions "nope" not found$/);
      return true;
    });
  } finally {
    await kube.close();
  }
});

test("an unreadable token file is refused naming kubernetes.tokenFile", async () => {
  const kube = await startFakeKube();
  try {
    const client = new KubeClient({ ...kube.config.kubernetes, tokenFile: "/nonexistent/token" });
    await assert.rejects(client.get("/api/v1/namespaces/agents"), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.field, "kubernetes.tokenFile");
      return true;
    });
    assert.equal(kube.requests.length, 0, "no request without a token");
  } finally {
    await kube.close();
  }
});

test("an API server that cannot be reached is an Unreachable KubeError naming kubernetes.server", async () => {
  // A port that was free a moment ago: nothing listens on it.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const kube = await startFakeKube();
  try {
    const client = new KubeClient({ ...kube.config.kubernetes, server: `https://127.0.0.1:${port}` });
    await assert.rejects(client.get("/api/v1/namespaces/agents"), (err: unknown) => {
      assert.ok(err instanceof KubeError);
      assert.equal(err.reason, "Unreachable");
      assert.match(err.message, /\(kubernetes\.server\): GET \/api\/v1\/namespaces\/agents: connect ECONNREFUSED/);
      return true;
    });
  } finally {
    await kube.close();
  }
});

test("a list follows the API server's continue tokens to the last page", async () => {
  const lb = await startLoopback((req, res) => {
    const url = new URL(req.path, "https://x");
    const page = url.searchParams.get("continue") ?? "";
    res.writeHead(200, { "Content-Type": "application/json" });
    if (page === "") res.end(JSON.stringify({ items: [{ n: 1 }, { n: 2 }], metadata: { continue: "p2" } }));
    else if (page === "p2") res.end(JSON.stringify({ items: [{ n: 3 }], metadata: {} }));
    else jsonError(res, 410, { reason: "Expired" });
  });
  try {
    const client = new KubeClient({ server: lb.config.dispatcherUrl, caFile: lb.config.caFile ?? "", tokenFile: lb.config.tokenFile, refreshSeconds: 30 });
    assert.deepEqual(await client.list("/apis/harness.openclaw.dev/v1alpha1/runtimepolicies"), [{ n: 1 }, { n: 2 }, { n: 3 }]);
    assert.deepEqual(lb.requests.map((r) => r.path), [
      "/apis/harness.openclaw.dev/v1alpha1/runtimepolicies?limit=250",
      "/apis/harness.openclaw.dev/v1alpha1/runtimepolicies?limit=250&continue=p2",
    ]);
  } finally {
    await lb.close();
  }
});
