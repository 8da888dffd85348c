import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { ConfigError, DEFAULT_RETRY, parseConfig, readToken } from "../src/config.js";

const valid = {
  dispatcherUrl: "https://harness-operator-dispatcher.harness-operator-system.svc:8443/",
  caFile: "/var/run/harness/ca.crt",
  tokenFile: "/var/run/secrets/harness/token",
  namespace: "agents",
  routes: [{ provider: "openai", supported: true, priority: 100 }],
};

test("a complete configuration is accepted, the URL without its trailing slash", () => {
  const config = parseConfig(valid);
  assert.equal(config.dispatcherUrl, "https://harness-operator-dispatcher.harness-operator-system.svc:8443");
  assert.equal(config.namespace, "agents");
  assert.equal(config.caFile, "/var/run/harness/ca.crt");
  assert.deepEqual(config.routes, [{ provider: "openai", supported: true, priority: 100 }]);
});

test("the refusal retries keep their defaults unless configured, field by field", () => {
  assert.equal(parseConfig(valid).retry, undefined, "absent: the harness uses DEFAULT_RETRY");
  assert.deepEqual(DEFAULT_RETRY, { maxRetries: 3, maxWaitSeconds: 30 });
  assert.deepEqual(parseConfig({ ...valid, retry: { maxRetries: 0 } }).retry, { maxRetries: 0, maxWaitSeconds: 30 });
  assert.deepEqual(parseConfig({ ...valid, retry: { maxWaitSeconds: 600 } }).retry, { maxRetries: 3, maxWaitSeconds: 600 });
});

test("each configuration mistake is refused naming its field", () => {
  const cases: Array<[string, unknown, string]> = [
    ["not an object", "x", "(config)"],
    ["missing URL", { ...valid, dispatcherUrl: undefined }, "dispatcherUrl"],
    ["plain http", { ...valid, dispatcherUrl: "http://127.0.0.1:9444" }, "dispatcherUrl"],
    ["not a URL", { ...valid, dispatcherUrl: "dispatcher:8443" }, "dispatcherUrl"],
    ["query in URL", { ...valid, dispatcherUrl: "https://d:8443/?x=1" }, "dispatcherUrl"],
    ["missing namespace", { ...valid, namespace: undefined }, "namespace"],
    ["bad namespace", { ...valid, namespace: "Agents_1" }, "namespace"],
    ["missing token file", { ...valid, tokenFile: undefined }, "tokenFile"],
    ["empty CA file", { ...valid, caFile: "" }, "caFile"],
    ["unknown field", { ...valid, token: "abc" }, "token"],
    ["routes not a list", { ...valid, routes: {} }, "routes"],
    ["route without supported", { ...valid, routes: [{ provider: "openai" }] }, "routes[0].supported"],
    ["route without provider", { ...valid, routes: [{ supported: true }] }, "routes[0].provider"],
    ["fallback on a supported route", { ...valid, routes: [{ provider: "openai", supported: true, fallbackRuntime: "openclaw" }] }, "routes[0].fallbackRuntime"],
    ["unknown route field", { ...valid, routes: [{ provider: "openai", supported: true, id: "x" }] }, "routes[0].id"],
    ["retry not an object", { ...valid, retry: 3 }, "retry"],
    ["negative retries", { ...valid, retry: { maxRetries: -1 } }, "retry.maxRetries"],
    ["fractional retries", { ...valid, retry: { maxRetries: 1.5 } }, "retry.maxRetries"],
    ["too many retries", { ...valid, retry: { maxRetries: 21 } }, "retry.maxRetries"],
    ["no wait at all", { ...valid, retry: { maxWaitSeconds: 0 } }, "retry.maxWaitSeconds"],
    ["wait as a string", { ...valid, retry: { maxWaitSeconds: "30" } }, "retry.maxWaitSeconds"],
    ["wait beyond ten minutes", { ...valid, retry: { maxWaitSeconds: 601 } }, "retry.maxWaitSeconds"],
    ["unknown retry field", { ...valid, retry: { retries: 2 } }, "retry.retries"],
  ];
  for (const [name, raw, field] of cases) {
    assert.throws(
      () => parseConfig(raw),
      (err: unknown) => err instanceof ConfigError && err.field === field && err.message.includes(`${field}:`),
      name,
    );
  }
});

test("the token file is read again on every request, so a rotated token is used at once", () => {
  const dir = mkdtempSync(join(tmpdir(), "oc-token-"));
  try {
    const tokenFile = join(dir, "token");
    writeFileSync(tokenFile, "first\n");
    assert.equal(readToken({ tokenFile }), "first");
    writeFileSync(tokenFile, "rotated");
    assert.equal(readToken({ tokenFile }), "rotated");
    writeFileSync(tokenFile, "\n");
    assert.throws(() => readToken({ tokenFile }), /tokenFile: .* is empty/);
    assert.throws(() => readToken({ tokenFile: join(dir, "missing") }), /tokenFile: cannot read/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
