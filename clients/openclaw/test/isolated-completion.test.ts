import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";

import { CompletionAnswerError, completionAnswer } from "../src/completion-answer.js";
import { createHarness } from "../src/harness.js";
import { type IsolatedParams, isolatedSession } from "../src/isolated-completion.js";
import { sessionName } from "../src/session-name.js";
import { startFakeKube } from "./fake-kube.js";
import { startLoopback } from "./loopback.js";

const route = { provider: "openai", modelId: "gpt-5.5", api: "openai-responses", baseUrl: "https://api.openai.com/v1", authRequirement: "subscription", requestTransportOverrides: "none" };

// OpenClaw's isolated completion as a harness-owned call: the plan leaves
// the credential to the harness (no forwarded profile, an empty store).
function isolated(extra: Record<string, unknown> = {}): IsolatedParams {
  return {
    provider: "openai", modelId: "gpt-5.5", agentId: "main", agentDir: "/tmp/agent", workspaceDir: "/tmp/ws", config: {},
    systemPrompt: "Classify the message. Answer with one word.", prompt: "Is this spam? BUY NOW", timeoutMs: 30000, thinkLevel: "low",
    authorization: {
      owner: "harness",
      plan: { providerForAuth: "openai", authProfileProviderForAuth: "openai", harnessAuthProvider: "openai", modelRoute: route },
      authProfileStore: { version: 1, profiles: {} },
    },
    ...extra,
  } as unknown as IsolatedParams;
}

const ANSWER = {
  decision: { runtime: "codex", harnessId: "codex" },
  result: { harnessId: "codex", text: "spam", reasoning: "all caps, a sales pitch", finishReason: "stop", usage: { input: 12, cachedInput: 2, output: 1, reasoning: 0, total: 15 } },
};

test("an isolated completion runs on the cluster through …/completions, on an AgentSession of its own, and answers with one assistant message", async () => {
  const kube = await startFakeKube((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(ANSWER));
  });
  try {
    const harness = createHarness(kube.config);
    assert.ok(harness.runIsolatedCompletionV2 !== undefined);
    const out = await harness.runIsolatedCompletionV2(isolated());
    const id = isolatedSession("main", "openai", "gpt-5.5");
    const name = sessionName(id.sessionId);
    const stored = kube.sessions.get(name);
    assert.ok(stored !== undefined, "the plugin created the completions' AgentSession");
    assert.deepEqual(stored.spec, { agentId: "main", sessionKey: "agent:main:harness-operator:isolated-completion:openai/gpt-5.5", sessionId: id.sessionId, model: "openai/gpt-5.5" });
    const posts = kube.requests.filter((r) => r.path.startsWith("/v1/"));
    assert.equal(posts.length, 1);
    assert.equal(posts[0]?.path, `/v1/namespaces/agents/agentsessions/${name}/completions`);
    assert.deepEqual(JSON.parse(posts[0]?.body ?? "{}"), {
      sessionId: id.sessionId, sessionKey: id.sessionKey, agentId: "main", provider: "openai", modelId: "gpt-5.5",
      modelProvider: {
        requestTransportOverrides: "none",
        preparedAuth: { source: "harness", requirement: "subscription" },
      },
      instructions: "Classify the message. Answer with one word.",
      thinkLevel: "low",
      timeoutMs: 30000,
      prompt: "Is this spam? BUY NOW",
    }, "the prompt, the caller's system prompt as instructions, the route facts; no tools, no transcript");
    assert.deepEqual(Object.keys(out), ["assistant"]);
    assert.deepEqual(out.assistant.content, [{ type: "thinking", thinking: "all caps, a sales pitch" }, { type: "text", text: "spam" }]);
    assert.equal(out.assistant.stopReason, "stop");
    assert.deepEqual([out.assistant.provider, out.assistant.model, out.assistant.api], ["openai", "gpt-5.5", "openai-responses"]);
    assert.deepEqual([out.assistant.usage.input, out.assistant.usage.cacheRead, out.assistant.usage.output, out.assistant.usage.totalTokens], [12, 2, 1, 15]);
  } finally {
    await kube.close();
  }
});

test("an isolated completion the cluster cannot authorize as asked fails closed before any request", async () => {
  const kube = await startFakeKube();
  try {
    const harness = createHarness(kube.config);
    const cases: Array<[string, IsolatedParams, RegExp]> = [
      ["a host-authorized call", isolated({ authorization: { owner: "host", model: { api: "openai-responses" }, auth: { apiKey: "sk-host", source: "env", mode: "api-key" } } }),
        /owner host.*must be used without substitution/],
      ["a forwarded auth profile the store does not hold", isolated({
        authorization: {
          owner: "harness",
          plan: { providerForAuth: "openai", authProfileProviderForAuth: "openai", forwardedAuthProfileId: "openai:work", modelRoute: route },
          authProfileStore: { version: 1, profiles: {} },
        },
      }), /auth profile "openai:work".*the attempt's auth store has no such profile/],
    ];
    for (const [name, p, message] of cases) {
      await assert.rejects(harness.runIsolatedCompletionV2!(p), (err: unknown) => {
        assert.ok(err instanceof AgentHarnessPreflightError, name);
        assert.match(err.message, message, name);
        assert.doesNotMatch(err.message, /sk-/, "no credential in the error");
        return true;
      });
    }
    assert.equal(kube.requests.length, 0, "neither the API server nor the dispatcher was asked");
  } finally {
    await kube.close();
  }
});

test("the auth profile OpenClaw's plan forwards goes with the completion inline, its key from the call's scoped store", async () => {
  const kube = await startFakeKube((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(ANSWER));
  });
  try {
    const harness = createHarness(kube.config);
    await harness.runIsolatedCompletionV2!(isolated({
      authorization: {
        owner: "harness",
        plan: { providerForAuth: "openai", authProfileProviderForAuth: "openai", forwardedAuthProfileId: "openai:work", modelRoute: route },
        authProfileStore: { version: 1, profiles: { "openai:work": { type: "api_key", provider: "openai", key: "sk-work-1" } } },
      },
    }));
    const post = kube.requests.find((r) => r.path.endsWith("/completions"));
    const body = JSON.parse(post?.body ?? "{}") as Record<string, unknown>;
    assert.deepEqual(body["authProfile"], { id: "openai:work", apiKey: "sk-work-1" });
  } finally {
    await kube.close();
  }
});

test("a dispatcher refusal of an isolated completion reaches OpenClaw through the error table, scoped only where the table allows", async () => {
  const refusals = [
    { status: 422, body: { code: "ToolPolicyUnenforceable", message: "gpt-5.5 is a catalog model: isolation cannot be proven", scope: "", retryable: false }, scope: undefined },
    { status: 503, body: { code: "HarnessAtCapacity", message: "no place", scope: "harness", retryable: true }, scope: "harness" },
    { status: 422, body: { code: "HarnessUnsupported", message: "agent harness x does not offer IsolatedCompletion", scope: "harness", retryable: false }, scope: undefined },
  ];
  let next = 0;
  const kube = await startFakeKube((_req, res) => {
    const r = refusals[next++];
    res.writeHead(r?.status ?? 500, { "Content-Type": "application/json" });
    res.end(JSON.stringify(r?.body ?? {}));
  });
  try {
    const harness = createHarness(kube.config);
    for (const r of refusals) {
      await assert.rejects(harness.runIsolatedCompletionV2!(isolated()), (err: unknown) => {
        assert.ok(err instanceof AgentHarnessPreflightError);
        assert.match(err.message, new RegExp(`isolated completion: the dispatcher refused it: ${r.body.code}`));
        assert.equal(err.scope, r.scope, r.body.code);
        return true;
      });
    }
  } finally {
    await kube.close();
  }
});

test("without Kubernetes settings the harness offers no isolated completion (it could not create the session the call needs)", async () => {
  const lb = await startLoopback(() => undefined);
  try {
    assert.equal(createHarness(lb.config).runIsolatedCompletionV2, undefined);
  } finally {
    await lb.close();
  }
});

test("an answer that is not one terminal text is refused, whatever else it holds", () => {
  const r = { api: "openai-responses", provider: "openai", model: "gpt-5.5" };
  const bad: Array<[string, unknown, RegExp]> = [
    ["no result", { decision: {} }, /it has no result/],
    ["an empty text", { result: { ...ANSWER.result, text: "" } }, /the answer is empty/],
    ["a tool-call finish", { result: { ...ANSWER.result, finishReason: "tool_calls" } }, /finishReason "tool_calls" is not "stop" or "length"/],
    ["a tool call in the result", { result: { ...ANSWER.result, toolCalls: [] } }, /unknown result field "toolCalls"/],
    ["delivery state beside the result", { ...ANSWER, delivery: {} }, /unknown response field "delivery"/],
    ["no harness", { result: { ...ANSWER.result, harnessId: "" } }, /names no harnessId/],
    ["not an object", "spam", /not a JSON object/],
  ];
  for (const [name, response, message] of bad) {
    assert.throws(() => completionAnswer("isolated completion", response, r, ["stop", "length"], 0), (err: unknown) => {
      assert.ok(err instanceof CompletionAnswerError, name);
      assert.match(err.message, message, name);
      return true;
    });
  }
  const cut = completionAnswer("isolated completion", { result: { ...ANSWER.result, finishReason: "length", reasoning: undefined } }, r, ["stop", "length"], 5);
  assert.equal(cut.assistant.stopReason, "length", "an isolated completion may end at its length limit");
  assert.deepEqual(cut.assistant.content, [{ type: "text", text: "spam" }]);
});
