import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

import { createHarness } from "../src/harness.js";
import { SAFE_DENY_TOOLS } from "../src/tool-policy.js";
import { type AttemptInput, SAFE_DENIED_LAYER, turnRequest } from "../src/turn-request.js";

// The tests run from dist/test/: the Go sources stay in the source tree.
const SCHEMA = new URL("../../../../internal/contract/wire/wire.schema.json", import.meta.url);
const CATALOG = new URL("../../../../internal/policy/toolpolicy/testdata/openclaw-tool-catalog.tsv", import.meta.url);

const config = { dispatcherUrl: "https://127.0.0.1:9", tokenFile: "/nonexistent", namespace: "agents", routes: [] };
const kube = { server: "https://127.0.0.1:9", tokenFile: "/nonexistent", refreshSeconds: 30 };

test("the registration declares exact tool-policy support, the safe-deny list and harness-owned auth, with or without a kubernetes block", () => {
  for (const harness of [createHarness(config), createHarness({ ...config, kubernetes: kube })]) {
    assert.equal(harness.conversationToolPolicySupport, "exact");
    assert.deepEqual(harness.conversationToolPolicySafeDenyTools, SAFE_DENY_TOOLS);
    assert.equal(harness.authBootstrap, "harness");
    harness.dispose?.();
  }
});

test("the safe-deny list is the wire package's SafeDenyTool set: canonical OpenClaw core tool ids, none of Codex's shell, files or computer control", () => {
  const schema = JSON.parse(readFileSync(SCHEMA, "utf8")) as { $defs: Record<string, { enum?: string[] }> };
  const wire = schema.$defs["SafeDenyTool"]?.enum;
  assert.ok(wire !== undefined && wire.length > 0, "wire.schema.json has SafeDenyTool");
  assert.deepEqual([...SAFE_DENY_TOOLS].sort(), [...wire].sort());
  assert.equal(new Set(SAFE_DENY_TOOLS).size, SAFE_DENY_TOOLS.length, "no name twice");

  const core = new Set<string>();
  for (const line of readFileSync(CATALOG, "utf8").split("\n")) {
    const [id, members] = line.split("\t");
    if (id?.startsWith("group:") && members !== undefined) for (const m of members.split(",")) core.add(m);
  }
  for (const name of SAFE_DENY_TOOLS) assert.ok(core.has(name), `${name} is a core tool id of OpenClaw's catalog`);
  for (const never of ["exec", "process", "code_execution", "read", "write", "edit", "apply_patch", "browser", "computer", "mobile_ui", "nodes", "screen"]) {
    assert.ok(!(SAFE_DENY_TOOLS as readonly string[]).includes(never), `${never} is never safe to deny on Codex`);
  }
});

test("the denies OpenClaw left to the harness reach the dispatcher as a deny layer of their own, after the conversation's", () => {
  const base = {
    runId: "run-1", sessionId: "s", provider: "openai", modelId: "gpt-5.5", prompt: "hi",
    model: { api: "openai-responses", baseUrl: "https://api.openai.com/v1" },
  };
  const cases: Array<{ name: string; extra: Record<string, unknown>; want: unknown }> = [
    { name: "none", extra: {}, want: undefined },
    { name: "an empty list", extra: { pluginHarnessToolPolicySafeDeniedTools: [] }, want: undefined },
    {
      name: "alone",
      extra: { pluginHarnessToolPolicySafeDeniedTools: ["web_search", "message"] },
      want: { layers: [{ name: SAFE_DENIED_LAYER, deny: ["web_search", "message"] }] },
    },
    {
      name: "beside the conversation layer and its alsoAllow",
      extra: { pluginHarnessToolPolicySafeDeniedTools: ["web_search"], conversationToolPolicy: { alsoAllow: ["tts"], deny: ["gateway"] } },
      want: { alsoAllow: ["tts"], layers: [{ name: "conversation", deny: ["gateway"] }, { name: SAFE_DENIED_LAYER, deny: ["web_search"] }] },
    },
  ];
  for (const c of cases) {
    const body = turnRequest({ ...base, ...c.extra } as unknown as AttemptInput);
    assert.deepEqual(body.toolPolicy, c.want, c.name);
    assert.equal(body.pluginHarnessToolPolicyRestricted, undefined, `${c.name}: OpenClaw did not restrict the turn`);
  }
});
