// A runtime question's way to a person and back, through OpenClaw's own
// question helper: runAgentHarnessGatewayQuestion (the real one; only its
// Gateway transport is a stand-in) records the question, the prompt goes out
// on the attempt's block reply, and the person's next plain-text message on
// the session answers it (claimPendingAgentQuestionAnswer: what OpenClaw's
// reply dispatcher does with a message that arrives while a question waits).
import { test } from "node:test";
import assert from "node:assert/strict";

import { claimPendingAgentQuestionAnswer, runAgentHarnessGatewayQuestion } from "openclaw/plugin-sdk/agent-harness-runtime";

import { type AskUser, gatewayQuestions, type NativeRequestInput, userInputAnswer } from "../src/native-requests.js";
import type { UserInputQuestion, UserInputRequest } from "../src/wire-shapes.js";
import { fakeHost } from "./host.js";

const NOW = Date.parse("2026-12-02T02:29:00Z");
const LATER = "2026-12-02T02:31:00Z";
// A question nobody is shown ends here, so a broken prompt fails the test within 30 s.
const SOON = "2026-12-02T02:29:30Z";
const SESSION = "agent:main:plan";

type Dispatcher = Extract<NonNullable<Parameters<AskUser>[0]["gatewayCall"]>, { version: 2 }>;
type Answers = { answers: Record<string, string[]> };

// OpenClaw 2026.9.6's Gateway question methods for one question at a time,
// refusing what its question.request schema refuses (QuestionRequestParamsSchema:
// 1–3 questions; questionId ^[a-z][a-z0-9_]*$; header ≤ 12 characters; a
// question text; ≤ 4 options, each with a label).
function fakeGateway() {
  const requests: Array<{ method: string; params: Record<string, unknown> }> = [];
  let id = "";
  let settle: (a: { answers: Answers; resolutionId: unknown }) => void = () => undefined;
  const answered = new Promise<{ answers: Answers; resolutionId: unknown }>((resolve) => {
    settle = resolve;
  });
  const dispatcher: Dispatcher = {
    version: 2,
    call: async ({ method, params, signal }) => {
      const p = params as Record<string, unknown>;
      requests.push({ method, params: p });
      switch (method) {
        case "question.request": {
          const refused = refusal(p.questions as Array<Record<string, unknown>>);
          if (refused !== undefined) throw new Error(`Invalid question.request params: ${refused}`);
          id = p.id as string;
          return { id, expiresAtMs: NOW + 120_000 };
        }
        case "question.waitAnswer": {
          // As the Gateway's client: the caller's signal ends the wait.
          const aborted = new Promise<never>((_, reject) => {
            signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
          });
          return { status: "answered", ...(await Promise.race([answered, aborted])) };
        }
        case "question.resolve":
          if (p.id !== id) throw new Error("no such question");
          if (p.cancel === true) return { status: "cancelled" };
          settle({ answers: p.answers as Answers, resolutionId: p.resolutionId });
          return { status: "answered", answers: p.answers };
        default:
          throw new Error(`unexpected ${method}`);
      }
    },
  };
  return { dispatcher, requests };
}

function refusal(questions: Array<Record<string, unknown>>): string | undefined {
  if (questions.length < 1 || questions.length > 3) return "questions";
  for (const q of questions) {
    if (!/^[a-z][a-z0-9_]*$/.test(String(q.questionId))) return "questionId";
    if (String(q.header).length > 12) return "header";
    if (typeof q.question !== "string" || q.question === "") return "question";
    const options = q.options as Array<{ label: string }>;
    if (options.length > 4 || options.some((o) => o.label === "")) return "options";
  }
  return undefined;
}

// The plugin's question, put through OpenClaw's helper on gateway; the
// prompt OpenClaw delivers resolves shown.
function asked(gateway: ReturnType<typeof fakeGateway>, r: UserInputRequest) {
  let shown: (text: string) => void = () => undefined;
  const prompt = new Promise<string>((resolve) => {
    shown = resolve;
  });
  const host = fakeHost();
  const p = {
    hostCapabilities: host.caps,
    runId: "run-plan",
    sessionKey: SESSION,
    agentId: "main",
    onBlockReply: async (payload: { text?: string }) => shown(payload.text ?? ""),
  } as unknown as NativeRequestInput;
  const warnings: string[] = [];
  const ask: AskUser = (q) => runAgentHarnessGatewayQuestion({ ...q, gatewayCall: gateway.dispatcher });
  const answer = userInputAnswer(p, r, ask, NOW, (m) => warnings.push(m));
  return { answer, prompt, warnings };
}

// What Codex asks in plan mode: options, and isOther on every question.
const pick: UserInputQuestion = {
  id: "Deploy-Target",
  header: "Deployment target",
  question: "Where should it run?",
  options: [{ label: "staging", description: "the test cluster" }, { label: "production" }],
  allowOther: true,
};

test("a person's plain-text reply on the session answers the runtime's question, by option number or in their own words", async () => {
  const cases = [
    { reply: "2", want: { choices: ["production"] } },
    { reply: "staging", want: { choices: ["staging"] } },
    { reply: "the canary pool", want: { text: "the canary pool" } },
  ];
  for (const c of cases) {
    const gateway = fakeGateway();
    const { answer, prompt, warnings } = asked(gateway, { requestId: "call_q", questions: [pick], expiresAt: SOON });
    // The prompt reaches the person before the runtime has an answer.
    const first = await Promise.race([prompt.then((text) => ({ text })), answer.then((given) => ({ given }))]);
    assert.ok("text" in first, `${c.reply}: answered without asking anyone: ${JSON.stringify(first)} ${warnings.join("; ")}`);
    const { text } = first;
    assert.match(text, /Where should it run\?/, c.reply);
    assert.match(text, /1\. staging - the test cluster\n2\. production/, c.reply);
    // The person replies on the session while the turn waits.
    assert.equal(await claimPendingAgentQuestionAnswer({ sessionKey: SESSION, text: c.reply }), true, c.reply);
    assert.deepEqual(await answer, { requestId: "call_q", answers: { "Deploy-Target": c.want } }, c.reply);
    assert.deepEqual(warnings, [], c.reply);
    const request = gateway.requests.find((r) => r.method === "question.request");
    assert.equal(request?.params.sessionKey, SESSION);
    assert.equal(request?.params.runId, "run-plan");
    // The runtime's id and header are outside what OpenClaw records: the
    // question is asked under an id made from it, with a shortened header.
    assert.deepEqual(
      (request?.params.questions as Array<Record<string, unknown>>).map((q) => [q.questionId, q.header]),
      [["deploy_target", "Deployment…"]],
    );
  }
});

test("a question OpenClaw cannot show whole is not asked: the runtime gets no answer at once, and OpenClaw's log says why", async () => {
  const options = (n: number) => Array.from({ length: n }, (_, i) => ({ label: `option ${i + 1}` }));
  const cases: Array<{ name: string; questions: UserInputQuestion[]; why: RegExp }> = [
    { name: "four questions", questions: [1, 2, 3, 4].map((i) => ({ id: `q${i}`, question: "Which?", options: options(2) })), why: /at most 3 questions at once; the runtime asked 4/ },
    { name: "five options", questions: [{ id: "size", question: "Which size?", options: options(5) }], why: /question "size" has 5 options; OpenClaw shows at most 4/ },
    { name: "no text", questions: [{ id: "size", question: "", options: options(2) }], why: /question "size" has no text/ },
    { name: "an option without a label", questions: [{ id: "size", question: "Which?", options: [{ label: "" }, { label: "big" }] }], why: /question "size" has an option without a label/ },
  ];
  for (const c of cases) {
    const gateway = fakeGateway();
    const { answer, warnings } = asked(gateway, { requestId: "call_r", questions: c.questions, expiresAt: LATER });
    assert.deepEqual(await answer, { requestId: "call_r", answers: {} }, c.name);
    assert.equal(gateway.requests.length, 0, `${c.name}: nothing reaches OpenClaw`);
    assert.equal(warnings.length, 1, c.name);
    assert.match(warnings[0] ?? "", /^harness-operator: the question call_r of run run-plan cannot be put to OpenClaw \(/, c.name);
    assert.match(warnings[0] ?? "", c.why, c.name);
  }
});

test("a question OpenClaw refuses or loses is answered with no answers at once, and logged", async () => {
  const refusing: AskUser = async () => {
    throw new Error("Invalid question.request params");
  };
  const warnings: string[] = [];
  const p = { hostCapabilities: fakeHost().caps, runId: "run-plan", sessionKey: SESSION } as unknown as NativeRequestInput;
  const answer = await userInputAnswer(p, { requestId: "call_s", questions: [{ id: "size", question: "Which?", options: [{ label: "big" }] }], expiresAt: LATER }, refusing, NOW, (m) => warnings.push(m));
  assert.deepEqual(answer, { requestId: "call_s", answers: {} });
  assert.deepEqual(warnings, ["harness-operator: asking the question call_s of run run-plan through OpenClaw failed; the runtime gets no answer: Invalid question.request params"]);
});

test("each question is asked in OpenClaw's shape: ids it records, headers it shows, the rest unchanged", () => {
  const q = (id: string, header?: string): UserInputQuestion => ({ id, question: "Which?", options: [{ label: "a" }], ...(header !== undefined ? { header } : {}) });
  const cases: Array<{ name: string; questions: UserInputQuestion[]; want: Array<[string, string]> }> = [
    { name: "ids and headers that fit stay", questions: [q("size", "Size"), q("env_2", "Environment!")], want: [["size", "Size"], ["env_2", "Environment!"]] },
    { name: "uppercase and punctuation become lowercase and _", questions: [q("Deploy-Target")], want: [["deploy_target", ""]] },
    { name: "an id that does not start with a letter gets q_", questions: [q("1st"), q("_x")], want: [["q_1st", ""], ["q__x", ""]] },
    { name: "a made id never takes another question's", questions: [q("Size"), q("size"), q("SIZE")], want: [["size_2", ""], ["size", ""], ["size_3", ""]] },
    { name: "a long header ends in …", questions: [q("a", "Deployment target")], want: [["a", "Deployment…"]] },
    { name: "an escape counts as shown", questions: [q("a", "Go\u202e")], want: [["a", "Go\\u202e"]] },
    { name: "a cut never splits a surrogate pair", questions: [q("a", "0123456789\u{1F680}x")], want: [["a", "0123456789…"]] },
  ];
  for (const c of cases) {
    const shaped = gatewayQuestions(c.questions);
    assert.ok("asked" in shaped, c.name);
    assert.deepEqual(shaped.asked.map((a) => [a.shown.id, a.shown.header]), c.want, c.name);
    assert.deepEqual(shaped.asked.map((a) => a.q), c.questions, `${c.name}: each keeps the runtime's question`);
  }
});
