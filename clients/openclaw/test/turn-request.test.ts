import { test } from "node:test";
import assert from "node:assert/strict";

import { type AttemptInput, turnRequest } from "../src/turn-request.js";

const base = {
  runId: "run-1", sessionId: "3f6d2a9e", sessionKey: "agent:main:demo", agentId: "main",
  provider: "openai", modelId: "gpt-5.5", prompt: "Say hello", thinkLevel: "medium", timeoutMs: 120000,
  model: { api: "openai-responses", baseUrl: "https://api.openai.com/v1" },
} as AttemptInput;

function attempt(extra: Record<string, unknown>): AttemptInput {
  return { ...base, ...extra } as AttemptInput;
}

test("the turn repeats the session's identity and carries the prepared prompt, think level and timeout", () => {
  const { runId, ...body } = turnRequest(base);
  assert.match(runId, /^run-1\.[0-9a-f]{16}$/, "OpenClaw's runId and the body's digest");
  assert.deepEqual(body, {
    sessionId: "3f6d2a9e", sessionKey: "agent:main:demo", agentId: "main",
    provider: "openai", modelId: "gpt-5.5", prompt: "Say hello", thinkLevel: "medium", timeoutMs: 120000, approvalMode: "untrusted",
  });
});

test("OpenClaw's own harness pin and runtime override never reach the cluster", () => {
  const withPin = attempt({ agentHarnessId: "harness-operator", agentHarnessRuntimeOverride: "harness-operator" });
  const body = turnRequest(withPin) as Record<string, unknown>;
  assert.equal(body["agentHarnessId"], undefined);
  assert.equal(body["agentHarnessRuntimeOverride"], undefined);
});

test("images become data URLs and a timeout beyond the dispatcher's bound is capped to it", () => {
  const body = turnRequest(attempt({ timeoutMs: 10 ** 12, images: [{ type: "image", data: "AAAA", mimeType: "image/png" }] }));
  assert.deepEqual(body.images, [{ url: "data:image/png;base64,AAAA" }]);
  assert.equal(body.timeoutMs, 86_400_000);
});

const officialRoute = {
  provider: "openai", modelId: "gpt-5.5", api: "openai-responses", baseUrl: "https://api.openai.com/v1",
  authRequirement: "api-key", requestTransportOverrides: "none", runtimePolicy: { compatibleIds: ["codex"] },
};

test("the route facts OpenClaw prepared reach the dispatcher as modelProvider, nothing filled in", () => {
  const cases: Array<{ name: string; plan: unknown; want: unknown }> = [
    {
      name: "pending route/auth preparation: no route facts, the session's pin decides",
      plan: undefined,
      want: undefined,
    },
    {
      name: "a concrete route with a forwarded auth profile",
      plan: { auth: { providerForAuth: "openai", authProfileProviderForAuth: "openai", forwardedAuthProfileId: "openai:work", selectedAuthMode: "api-key", modelRoute: officialRoute } },
      want: {
        api: "openai-responses", baseUrl: "https://api.openai.com/v1", requestTransportOverrides: "none",
        runtimePolicy: { compatibleIds: ["codex"] }, preparedAuth: { source: "profile", mode: "api-key", requirement: "api-key" },
      },
    },
    {
      name: "a direct credential on a route with authored request overrides and no declared runtime policy",
      plan: { auth: { providerForAuth: "openai", authProfileProviderForAuth: "openai", selectedAuthMode: "token", modelRoute: { ...officialRoute, requestTransportOverrides: "present", runtimePolicy: undefined } } },
      want: {
        api: "openai-responses", baseUrl: "https://api.openai.com/v1", requestTransportOverrides: "present",
        preparedAuth: { source: "direct", mode: "token", requirement: "api-key" },
      },
    },
    {
      name: "routes left to harness-owned auth: their shared support, no requirement",
      plan: { auth: { providerForAuth: "openai", authProfileProviderForAuth: "openai", harnessAuthProvider: "codex", deferredRouteSupport: { requestTransportOverrides: "none", runtimePolicy: { compatibleIds: [] } } } },
      want: {
        api: "openai-responses", baseUrl: "https://api.openai.com/v1", requestTransportOverrides: "none",
        runtimePolicy: { compatibleIds: [] }, preparedAuth: { source: "harness" },
      },
    },
    {
      name: "an auth plan without any route: requestTransportOverrides stays absent (the dispatcher refuses, naming it)",
      plan: { auth: { providerForAuth: "openai", authProfileProviderForAuth: "openai" } },
      want: { api: "openai-responses", baseUrl: "https://api.openai.com/v1", preparedAuth: { source: "none" } },
    },
  ];
  for (const c of cases) {
    assert.deepEqual(turnRequest(attempt({ runtimePlan: c.plan })).modelProvider, c.want, c.name);
  }
});

test("the tool policy and the host's verdict reach the dispatcher as prepared", () => {
  const cases: Array<{ name: string; extra: Record<string, unknown>; want: Record<string, unknown> }> = [
    { name: "no policy", extra: {}, want: {} },
    { name: "toolsAllow [] denies every tool and stays []", extra: { toolsAllow: [] }, want: { toolsAllow: [] } },
    { name: "toolsAllow narrows", extra: { toolsAllow: ["message", "web_search"] }, want: { toolsAllow: ["message", "web_search"] } },
    { name: "tools disabled", extra: { disableTools: true }, want: { disableTools: true } },
    { name: "the host's restriction verdict", extra: { pluginHarnessToolPolicyRestricted: true }, want: { pluginHarnessToolPolicyRestricted: true } },
    {
      name: "the conversation layer: alsoAllow joins its allowlist",
      extra: { conversationToolPolicy: { allow: ["message"], alsoAllow: ["web_search"], deny: ["exec"] } },
      want: { toolPolicy: { layers: [{ name: "conversation", allow: ["message", "web_search"], deny: ["exec"] }] } },
    },
    {
      name: "the conversation layer without an allowlist: alsoAllow widens the profile",
      extra: { conversationToolPolicy: { alsoAllow: ["web_search"], deny: ["exec"] } },
      want: { toolPolicy: { alsoAllow: ["web_search"], layers: [{ name: "conversation", deny: ["exec"] }] } },
    },
  ];
  for (const c of cases) {
    const body = turnRequest(attempt(c.extra)) as Record<string, unknown>;
    const got: Record<string, unknown> = {};
    for (const k of ["toolPolicy", "toolsAllow", "disableTools", "pluginHarnessToolPolicyRestricted"]) if (body[k] !== undefined) got[k] = body[k];
    assert.deepEqual(got, c.want, c.name);
  }
});

test("native actions are asked for unless the attempt's exec policy never asks, and a policy the cluster cannot hold builds no body", () => {
  const cases: Array<[string, unknown, string]> = [
    ["no exec overrides: OpenClaw's configured policy decides through runBeforeToolCall", undefined, "untrusted"],
    ["ask on a miss", { ask: "on-miss" }, "untrusted"],
    ["ask off", { ask: "off" }, "never"],
    ["full exec mode", { mode: "full" }, "never"],
  ];
  for (const [name, execOverrides, want] of cases) {
    assert.equal(turnRequest(attempt({ execOverrides })).approvalMode, want, name);
  }
  assert.throws(() => turnRequest(attempt({ execOverrides: { ask: "always" } })), /ask always/);
  assert.throws(() => turnRequest(attempt({ execOverrides: { mode: "allowlist" } })), /"allowlist"/);
});

test("the host tools, the extra system prompt and the gateway's turns are carried", () => {
  const tools = [{ name: "message", description: "send a message", parameters: { type: "object", properties: {} } }];
  const gatewayTranscript = { afterRunId: "run-0", messages: [{ role: "user" as const, text: "hi" }, { role: "assistant" as const, text: "hello" }] };
  const body = turnRequest(attempt({ extraSystemPrompt: "Be brief." }), { tools, gatewayTranscript });
  assert.deepEqual(body.tools, tools);
  assert.equal(body.extraSystemPrompt, "Be brief.");
  assert.deepEqual(body.gatewayTranscript, gatewayTranscript);
  const none = turnRequest(attempt({ extraSystemPrompt: "" }), { tools: [] });
  assert.equal("tools" in none, false, "an empty tool list is not sent");
  assert.equal("extraSystemPrompt" in none, false);
});

test("an attempt OpenClaw retries under its runId with another body gets another dispatcher runId; the same body the same one", () => {
  const first = turnRequest(base).runId;
  assert.equal(turnRequest({ ...base }).runId, first, "a repeat of the attempt is the same run: the dispatcher replays it");
  const retries = [
    attempt({ prompt: "The previous attempt did not produce a user-visible answer. Continue from the current state and produce the visible answer now. Do not restart from scratch." }),
    attempt({ thinkLevel: "low" }),
  ];
  for (const retry of retries) {
    const id = turnRequest(retry).runId;
    assert.notEqual(id, first);
    assert.ok(id.startsWith("run-1."), "OpenClaw's runId stays the prefix");
  }
  const gateway = { afterRunId: "run-0.0123456789abcdef", messages: [{ role: "user" as const, text: "hi" }] };
  assert.notEqual(turnRequest(base, { gatewayTranscript: gateway }).runId, first, "every field of the body counts");
});

test("the verified runtime artifact OpenClaw asks for or expects goes to the dispatcher", () => {
  const body = turnRequest(attempt({ captureRuntimeArtifact: true, expectedRuntimeArtifact: { id: "a", fingerprint: "sha256:f" } }));
  assert.equal(body.captureRuntimeArtifact, true);
  assert.deepEqual(body.expectedRuntimeArtifact, { id: "a", fingerprint: "sha256:f" });
  const plain = turnRequest(base) as Record<string, unknown>;
  assert.equal("captureRuntimeArtifact" in plain || "expectedRuntimeArtifact" in plain, false, "ordinary turns carry neither");
});

test("a forwarded auth profile goes inline with its key, and the key is no part of the dispatcher's runId", () => {
  const profile = { id: "openai:work", apiKey: "sk-turn-request-key-1" };
  const body = turnRequest(base, { authProfile: profile });
  assert.deepEqual(body.authProfile, profile);
  assert.ok(!body.runId.includes("sk-"), "the runId names no key");
  const rotated = turnRequest(base, { authProfile: { id: "openai:work", apiKey: "sk-turn-request-key-2" } });
  assert.equal(rotated.runId, body.runId, "a retry after the key rotated is the same run");
  const other = turnRequest(base, { authProfile: { id: "openai:other", apiKey: "sk-turn-request-key-1" } });
  assert.notEqual(other.runId, body.runId, "another profile is another body");
  assert.notEqual(turnRequest(base).runId, body.runId, "a turn without profile is another body");
  assert.equal(turnRequest(base).authProfile, undefined, "no profile forwarded: none sent");
});
