import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";

import { DispatcherClient } from "../src/client.js";
import { createHarness } from "../src/harness.js";
import { sessionName } from "../src/session-name.js";
import {
  type ReadSessionText,
  runSideQuestion,
  SIDE_QUESTION_INSTRUCTIONS,
  type SideQuestionParams,
  sideQuestionContext,
} from "../src/side-question.js";
import type { ConversationText } from "../src/transcript-marker.js";
import { MaxCompletionBytes as MAX_COMPLETION_BYTES, MaxCompletionMessages as MAX_CONTEXT_MESSAGES } from "../src/wire.js";
import { jsonError, startLoopback } from "./loopback.js";

const route = { provider: "openai", modelId: "stub-model", api: "openai-responses", baseUrl: "https://api.openai.com/v1", authRequirement: "subscription", requestTransportOverrides: "none" };

// OpenClaw's /btw on a session whose turns ran on the cluster: the plan
// leaves the credential to the harness (no forwarded profile, no host key).
function side(extra: Record<string, unknown> = {}): SideQuestionParams {
  return {
    cfg: {}, agentDir: "/tmp/agent", provider: "openai", model: "stub-model",
    runtimeModel: { api: "openai-responses", baseUrl: "https://api.openai.com/v1" },
    preparedRuntimeAuth: {
      plan: { providerForAuth: "openai", authProfileProviderForAuth: "openai", harnessAuthProvider: "openai", modelRoute: route },
      authProfileStore: { version: 1, profiles: {} },
    },
    question: "what was the city again?",
    sessionEntry: { sessionId: "btw-1" }, sessionKey: "agent:main:btw", sessionId: "btw-1", sessionFile: "/tmp/s.jsonl",
    agentId: "main", storePath: "/tmp/store", isNewSession: false, resolvedThinkLevel: "low", resolvedReasoningLevel: "off",
    hostCapabilities: {},
    ...extra,
  } as unknown as SideQuestionParams;
}

const CONVERSATION: ConversationText[] = [
  { role: "user", text: "Plan a trip to Lisbon" },
  { role: "assistant", text: "Lisbon it is: three days." },
];

const ANSWER = {
  decision: { runtime: "codex", harnessId: "codex" },
  result: { harnessId: "codex", text: " Lisbon. ", finishReason: "stop", usage: { input: 40, cachedInput: 0, output: 2, reasoning: 0, total: 42 } },
};

function reader(messages: ConversationText[], seen: Array<Parameters<ReadSessionText>[0]> = []): ReadSessionText {
  return async (q) => {
    seen.push(q);
    return messages;
  };
}

test("a side question runs on the session's own AgentSession through …/completions: the conversation as context, the question last, the answer's text and usage", async () => {
  const lb = await startLoopback((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(ANSWER));
  });
  try {
    const seen: Array<Parameters<ReadSessionText>[0]> = [];
    const out = await runSideQuestion(side(), { client: new DispatcherClient(lb.config), readConversation: reader(CONVERSATION, seen) });
    assert.deepEqual(out, { text: "Lisbon.", usage: { input: 40, output: 2, cacheRead: 0, total: 42 } });
    assert.deepEqual(seen, [{ agentId: "main", sessionKey: "agent:main:btw", storePath: "/tmp/store", limit: MAX_CONTEXT_MESSAGES + 1 }]);
    assert.equal(lb.requests.length, 1);
    assert.equal(lb.requests[0]?.path, `/v1/namespaces/agents/agentsessions/${sessionName("btw-1")}/completions`);
    const body = JSON.parse(lb.requests[0]?.body ?? "{}") as Record<string, unknown>;
    const prompt = body["prompt"] as string;
    delete body["prompt"];
    assert.deepEqual(body, {
      sessionId: "btw-1", sessionKey: "agent:main:btw", agentId: "main", provider: "openai", modelId: "stub-model",
      instructions: SIDE_QUESTION_INSTRUCTIONS,
      messages: [{ role: "user", text: "Plan a trip to Lisbon" }, { role: "assistant", text: "Lisbon it is: three days." }],
      modelProvider: {
        api: "openai-responses", baseUrl: "https://api.openai.com/v1", requestTransportOverrides: "none",
        preparedAuth: { source: "harness", requirement: "subscription" },
      },
      thinkLevel: "low",
    }, "the session's identity and model, the context, the route facts; no tools, no runId, no transcript source");
    assert.match(prompt, /<side_question>\nwhat was the city again\?\n<\/side_question>$/);
    assert.doesNotMatch(prompt, /latest_request/, "no request is running");
  } finally {
    await lb.close();
  }
});

test("the harness registers the side question, so OpenClaw's /btw on a cluster session asks the cluster instead of calling the provider from the gateway", () => {
  const harness = createHarness({ dispatcherUrl: "https://127.0.0.1:1", caFile: "/dev/null", tokenFile: "/dev/null", namespace: "agents", routes: [] });
  assert.equal(typeof harness.runSideQuestion, "function");
});

test("a trailing user message is the request still running: background in the prompt, never the question or part of the context", () => {
  const ctx = sideQuestionContext([...CONVERSATION, { role: "user", text: "Now book the hotel" }, { role: "assistant", text: "  " }], 0);
  assert.deepEqual(ctx, { messages: [{ role: "user", text: "Plan a trip to Lisbon" }, { role: "assistant", text: "Lisbon it is: three days." }], inFlight: "Now book the hotel" });
});

test("the context keeps the newest messages within the dispatcher's bounds instead of being refused for its size", () => {
  const many: ConversationText[] = Array.from({ length: MAX_CONTEXT_MESSAGES + 1 }, (_, i) => ({ role: i % 2 === 0 ? "assistant" : "user", text: `m${i}` }));
  const byCount = sideQuestionContext(many, 0);
  assert.equal(byCount.messages.length, MAX_CONTEXT_MESSAGES);
  assert.equal(byCount.messages.at(-1)?.text, `m${MAX_CONTEXT_MESSAGES}`);
  assert.equal(byCount.messages[0]?.text, "m1", "the oldest is left out");
  const big = "x".repeat(MAX_COMPLETION_BYTES / 2);
  const bySize = sideQuestionContext([{ role: "user", text: big }, { role: "assistant", text: big }, { role: "user", text: "q" }, { role: "assistant", text: "a" }], 100);
  assert.deepEqual(bySize.messages.map((m) => m.text?.length), [big.length, 1, 1], "the older of the two large texts does not fit with the rest");
});

test("a side question the cluster cannot answer as asked is refused before any request, saying why, to OpenClaw and in the gateway's log", async () => {
  const lb = await startLoopback((_req, res) => jsonError(res, 500, {}));
  try {
    const client = new DispatcherClient(lb.config);
    const cases: Array<[string, SideQuestionParams, ConversationText[], RegExp]> = [
      ["an image", side({ images: [{ type: "image", data: "AAAA", mimeType: "image/png" }] }), CONVERSATION, /1 image\(s\).*text only/],
      ["no conversation yet", side(), [], /holds no conversation yet/],
      ["no session key", side({ sessionKey: undefined }), CONVERSATION, /no agent or session key/],
      ["a forwarded auth profile the store does not hold", side({
        preparedRuntimeAuth: {
          plan: { providerForAuth: "openai", authProfileProviderForAuth: "openai", forwardedAuthProfileId: "openai:work", modelRoute: route },
          authProfileStore: { version: 1, profiles: {} },
          resolvedApiKey: "sk-host-1",
        },
      }), CONVERSATION, /auth profile "openai:work".*no such profile/],
    ];
    for (const [name, p, conversation, message] of cases) {
      const warned: string[] = [];
      const logger = { warn: (m: string) => warned.push(m) };
      await assert.rejects(runSideQuestion(p, { client, readConversation: reader(conversation), logger }), (err: unknown) => {
        assert.ok(err instanceof AgentHarnessPreflightError, name);
        assert.match(err.message, message, name);
        assert.doesNotMatch(err.message, /sk-/, "no credential in the error");
        return true;
      });
      assert.equal(warned.length, 1, `${name}: the gateway's log says it too`);
      assert.match(warned[0] ?? "", message, name);
      assert.doesNotMatch(warned[0] ?? "", /sk-/, "no credential in the log");
    }
    assert.equal(lb.requests.length, 0, "the dispatcher was not asked");
  } finally {
    await lb.close();
  }
});

test("a forwarded auth profile goes inline; a host key resolved for an API-key route is never sent, as a turn never sends it", async () => {
  const lb = await startLoopback((_req, res) => {
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(ANSWER));
  });
  try {
    const client = new DispatcherClient(lb.config);
    await runSideQuestion(side({
      preparedRuntimeAuth: {
        plan: { providerForAuth: "openai", authProfileProviderForAuth: "openai", forwardedAuthProfileId: "openai:work", modelRoute: route },
        authProfileStore: { version: 1, profiles: { "openai:work": { type: "api_key", provider: "openai", key: "sk-work-1" } } },
      },
    }), { client, readConversation: reader(CONVERSATION) });
    await runSideQuestion(side({
      preparedRuntimeAuth: {
        plan: { providerForAuth: "openai", authProfileProviderForAuth: "openai", modelRoute: { ...route, authRequirement: "api-key" } },
        authProfileStore: { version: 1, profiles: {} },
        resolvedApiKey: "sk-host-1",
      },
    }), { client, readConversation: reader(CONVERSATION) });
    const bodies = lb.requests.map((r) => JSON.parse(r.body) as Record<string, unknown>);
    assert.deepEqual(bodies[0]?.["authProfile"], { id: "openai:work", apiKey: "sk-work-1" });
    assert.equal(bodies[1]?.["authProfile"], undefined);
    assert.doesNotMatch(lb.requests[1]?.body ?? "", /sk-host-1/);
  } finally {
    await lb.close();
  }
});

test("the dispatcher's refusal reaches OpenClaw's /btw as a preflight error naming it; an answer with a field the plugin does not know is refused", async () => {
  const answers = [
    (res: Parameters<Parameters<typeof startLoopback>[0]>[1]) => jsonError(res, 422, { code: "ToolPolicyUnenforceable", message: "model gpt-6.1-sol matches Codex catalog model gpt-6.1-sol", scope: "", retryable: false }),
    (res: Parameters<Parameters<typeof startLoopback>[0]>[1]) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ ...ANSWER, result: { ...ANSWER.result, toolCalls: [{ name: "exec" }] } }));
    },
  ];
  let next = 0;
  const lb = await startLoopback((_req, res) => answers[next++]?.(res));
  try {
    const client = new DispatcherClient(lb.config);
    await assert.rejects(runSideQuestion(side(), { client, readConversation: reader(CONVERSATION) }), (err: unknown) => {
      assert.ok(err instanceof AgentHarnessPreflightError);
      assert.match(err.message, /side question: the dispatcher refused it: ToolPolicyUnenforceable/);
      return true;
    });
    await assert.rejects(runSideQuestion(side(), { client, readConversation: reader(CONVERSATION) }), /unknown result field "toolCalls"/);
  } finally {
    await lb.close();
  }
});
