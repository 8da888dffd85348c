import { test } from "node:test";
import assert from "node:assert/strict";

import { loggedSupports, maskedUrl } from "../src/support-log.js";

test("each distinct supports() question and answer is logged once at debug level, with OpenClaw's route facts last", () => {
  const lines: string[] = [];
  const supports = loggedSupports(() => ({ supported: true, priority: 100, reason: "harness-operator: the cluster would run it" }), { debug: (m) => lines.push(m) });
  const facts = {
    api: "openai-responses",
    baseUrl: "http://127.0.0.1:4000/v1",
    requestTransportOverrides: "none" as const,
    runtimePolicy: { compatibleIds: ["openclaw"] },
    preparedAuth: { source: "direct" as const, mode: "api-key" },
  };
  const ctx = { provider: "openai", modelId: "gpt-5.5", modelProvider: facts };
  assert.deepEqual(supports(ctx), { supported: true, priority: 100, reason: "harness-operator: the cluster would run it" });
  supports(ctx);
  supports({ provider: "openai", modelId: "gpt-5.5" });
  assert.equal(lines.length, 2, lines.join("\n"));
  assert.equal(lines[0], `harness-operator: supports openai/gpt-5.5: supported (harness-operator: the cluster would run it); OpenClaw's route facts: ${JSON.stringify(facts)}`);
  assert.match(lines[1] ?? "", /OpenClaw's route facts: none$/);
});

test("OpenClaw's opaque request settings and a base URL's credentials never reach the log", () => {
  const lines: string[] = [];
  const supports = loggedSupports(() => ({ supported: false, reason: "no" }), { debug: (m) => lines.push(m) });
  supports({
    provider: "openai",
    modelProvider: { baseUrl: "https://user:s3cret@models.example/v1?key=s3cret", request: { proxy: "http://proxyuser:s3cret@proxy" } },
  });
  assert.equal(lines.length, 1);
  assert.doesNotMatch(lines[0] ?? "", /s3cret|proxy/);
  assert.match(lines[0] ?? "", /"baseUrl":"https:\/\/redacted@models.example\/v1\?redacted"/);
});

test("a logger without debug gets nothing and the answer is unchanged", () => {
  const supports = loggedSupports(() => ({ supported: false, reason: "no", fallbackRuntime: "openclaw" }), {});
  assert.deepEqual(supports({ provider: "openai" }), { supported: false, reason: "no", fallbackRuntime: "openclaw" });
});

test("maskedUrl masks user info and query, drops the fragment, and hides what does not parse", () => {
  const cases: Array<[string, string]> = [
    ["http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1"],
    ["https://user:pw@models.example/v1", "https://redacted@models.example/v1"],
    ["https://models.example/v1?key=s3cret", "https://models.example/v1?redacted"],
    ["https://models.example/v1#frag", "https://models.example/v1"],
    ["http://[::1", "(unparseable, not shown)"],
  ];
  for (const [raw, want] of cases) assert.equal(maskedUrl(raw), want, raw);
});
