import { test } from "node:test";
import assert from "node:assert/strict";

import { type AskUser, approvalAnswer, type NativeRequestInput, userInputAnswer } from "../src/native-requests.js";
import type { ApprovalRequest } from "../src/wire-shapes.js";
import { fakeHost, type FakeHost } from "./host.js";

const NOW = Date.parse("2026-12-02T02:29:00Z");
const LATER = "2026-12-02T02:31:00Z";

function input(host: FakeHost, extra: Record<string, unknown> = {}): NativeRequestInput {
  return { hostCapabilities: host.caps, runId: "run-1", sessionKey: "agent:main:demo", agentId: "main", ...extra } as unknown as NativeRequestInput;
}

const command: ApprovalRequest = {
  requestId: "call_3", kind: "command", callId: "call_3", tool: "exec", command: "/bin/bash -lc 'echo hi'", cwd: "/ws",
  decisions: ["approve_once", "approve_for_turn", "deny"], expiresAt: LATER,
};

test("a native command is approved through the attempt's runBeforeToolCall with the action's facts", async () => {
  const host = fakeHost();
  assert.deepEqual(await approvalAnswer(input(host), command, NOW), { requestId: "call_3", decision: "approve_once" });
  assert.equal(host.beforeToolCalls.length, 1);
  const req = host.beforeToolCalls[0];
  assert.equal(req?.toolName, "exec");
  assert.deepEqual(req?.params, { command: "/bin/bash -lc 'echo hi'" });
  assert.equal(req?.toolCallId, "call_3");
  assert.deepEqual(req?.nativeOperation, { cwd: "/ws" });
  assert.ok(req?.signal instanceof AbortSignal, "waiting is bounded by the request's expiry");
});

test("the host's policy outcome becomes the dispatcher's decision, and anything else is a denial", async () => {
  const cases: Array<{ name: string; outcome: unknown; decisions?: string[]; want: string }> = [
    { name: "allowed once", outcome: { blocked: false, params: { command: command.command } }, want: "approve_once" },
    { name: "allowed always: for the rest of the turn", outcome: { blocked: false, params: { command: command.command }, approvalResolution: "allow-always" }, want: "approve_for_turn" },
    { name: "allowed always where the runtime offers only once", outcome: { blocked: false, params: { command: command.command }, approvalResolution: "allow-always" }, decisions: ["approve_once", "deny"], want: "approve_once" },
    { name: "blocked by policy or the user", outcome: { blocked: true, kind: "veto", reason: "denied" }, want: "deny" },
    { name: "a hook rewrote the command: the runtime cannot run the rewrite", outcome: { blocked: false, params: { command: "rm -rf /" } }, want: "deny" },
    { name: "the host failed", outcome: new Error("gateway gone"), want: "deny" },
  ];
  for (const c of cases) {
    const host = fakeHost({
      beforeToolCall: () => {
        if (c.outcome instanceof Error) throw c.outcome;
        return c.outcome as never;
      },
    });
    const r: ApprovalRequest = c.decisions === undefined ? command : { ...command, decisions: c.decisions as NonNullable<ApprovalRequest["decisions"]> };
    assert.equal((await approvalAnswer(input(host), r, NOW))?.decision, c.want, c.name);
  }
});

test("a file change is checked as apply_patch with the paths it would write", async () => {
  const host = fakeHost();
  await approvalAnswer(input(host), { requestId: "call_5", kind: "file_change", callId: "call_5", tool: "apply_patch", changedPaths: ["/ws/a.txt"], decisions: ["approve_once", "deny"], expiresAt: LATER }, NOW);
  assert.equal(host.beforeToolCalls[0]?.toolName, "apply_patch");
  assert.deepEqual(host.beforeToolCalls[0]?.params, { paths: ["/ws/a.txt"] });
});

test("other native requests ask OpenClaw's approval surface and wait for its decision", async () => {
  const host = fakeHost({ approval: { id: "appr-1" }, waited: "allow-always" });
  const answer = await approvalAnswer(input(host), {
    requestId: "call_7", kind: "permissions", callId: "call_7", tool: "permissions", reason: "needs network", permissions: { network: { enabled: true } },
    decisions: ["approve_once", "approve_for_turn", "deny"], expiresAt: LATER,
  }, NOW);
  assert.deepEqual(answer, { requestId: "call_7", decision: "approve_for_turn" });
  assert.equal(host.approvals[0]?.description, `Grants exactly: {"network":{"enabled":true}}. The runtime's reason: needs network`);
  assert.deepEqual(host.approvals[0]?.allowedDecisions, ["allow-once", "allow-always", "deny"]);
  assert.equal(host.approvals[0]?.timeoutMs, 120_000, "the time left until the dispatcher stops waiting");
  assert.deepEqual(host.waits, ["appr-1"]);
  const unanswered = fakeHost({ approval: { id: "appr-2" } });
  assert.equal((await approvalAnswer(input(unanswered), { requestId: "r", kind: "mcp_elicitation", decisions: ["approve_once", "deny"], expiresAt: LATER }, NOW))?.decision, "deny");
});

test("a question is asked through OpenClaw's gateway question, and its answers become choices and free text", async () => {
  const asked: Array<Parameters<AskUser>[0]> = [];
  const ask: AskUser = async (q) => {
    asked.push(q);
    return { status: "answered", answers: { answers: { env: ["staging", "only the canary"], size: ["large"] } } };
  };
  const onBlockReply = async (): Promise<void> => undefined;
  const host = fakeHost();
  const answer = await userInputAnswer(input(host, { onBlockReply }), {
    requestId: "call_8", callId: "call_8", expiresAt: LATER,
    questions: [
      { id: "env", header: "Target", question: "Which environment?", options: [{ label: "staging", description: "the test cluster" }, { label: "production" }], allowOther: true },
      { id: "size", question: "Which size?", options: [{ label: "small" }] },
    ],
  }, ask, NOW);
  assert.deepEqual(answer, { requestId: "call_8", answers: { env: { choices: ["staging"], text: "only the canary" } } });
  assert.deepEqual(asked[0]?.questions, [
    { id: "env", header: "Target", question: "Which environment?", options: [{ label: "staging", description: "the test cluster" }, { label: "production" }], isOther: true },
    { id: "size", header: "", question: "Which size?", options: [{ label: "small" }] },
  ]);
  assert.equal(asked[0]?.sessionKey, "agent:main:demo");
  assert.equal(asked[0]?.runId, "run-1");
  assert.equal(asked[0]?.timeoutMs, 120_000);
  assert.equal(asked[0]?.delivery.onBlockReply, onBlockReply);
  assert.equal(asked[0]?.delivery.hostCapabilities, host.caps);
});

test("a question nobody answered, or that cannot be asked, is answered with no answers at once", async () => {
  const expired: AskUser = async () => ({ status: "expired" });
  const req = { requestId: "call_8", questions: [{ id: "env", question: "Which?" }], expiresAt: LATER };
  assert.deepEqual(await userInputAnswer(input(fakeHost()), req, expired, NOW), { requestId: "call_8", answers: {} });
  let called = false;
  const never: AskUser = async () => {
    called = true;
    return { status: "cancelled" };
  };
  assert.deepEqual(await userInputAnswer(input(fakeHost(), { sessionKey: undefined }), req, never, NOW), { requestId: "call_8", answers: {} });
  assert.equal(called, false, "OpenClaw's questions belong to a session key");
});

// The model writes what the runtime asks about. ESC[2K erases the terminal
// line, CR returns to its start, and U+202E shows the rest right to left: a
// person would read "echo safe" and approve a command that deletes files.
const ERASE_AND_REWRITE = "rm -rf ~/work \u001b[2K\recho safe";
const REVERSED = "cat notes\u202etxt.hs\u202c";

test("a command's control characters and bidi overrides reach OpenClaw's policy and prompt escaped", async () => {
  const host = fakeHost();
  await approvalAnswer(input(host), {
    ...command, command: `${ERASE_AND_REWRITE}\n${REVERSED}`, cwd: "/ws\u001b]0;title\u0007", tool: "exec\u200b",
  }, NOW);
  const req = host.beforeToolCalls[0];
  assert.deepEqual(req?.params, { command: "rm -rf ~/work \\x1b[2K\\recho safe\ncat notes\\u202etxt.hs\\u202c" });
  assert.deepEqual(req?.nativeOperation, { cwd: "/ws\\x1b]0;title\\x07" });
  assert.equal(req?.toolName, "exec\\u200b");
});

test("a file change's paths reach OpenClaw escaped, each one whole", async () => {
  const host = fakeHost();
  await approvalAnswer(input(host), {
    requestId: "call_5", kind: "file_change", callId: "call_5", tool: "apply_patch", changedPaths: ["/ws/a.txt", "/ws/\u202egnp.sh", "/ws/b\r\n.txt", "/ws/\u009b31m"],
    decisions: ["approve_once", "deny"], expiresAt: LATER,
  }, NOW);
  assert.deepEqual(host.beforeToolCalls[0]?.params, { paths: ["/ws/a.txt", "/ws/\\u202egnp.sh", "/ws/b\\r\\n.txt", "/ws/\\x9b31m"] });
});

test("ordinary text reaches OpenClaw unchanged: multi-line commands, quotes, backslashes, accents and emoji", async () => {
  const host = fakeHost();
  const ordinary = "cd /ws && printf 'a\\tb\\n' | grep -E '^a\\s' > out.txt\ncat <<'EOF'\nnaïve café 日本語 👋\n\tindented\nEOF";
  assert.equal((await approvalAnswer(input(host), { ...command, command: ordinary }, NOW))?.decision, "approve_once");
  assert.deepEqual(host.beforeToolCalls[0]?.params, { command: ordinary });
  assert.deepEqual(host.beforeToolCalls[0]?.nativeOperation, { cwd: "/ws" });
  const asked = fakeHost({ approval: { decision: "allow-once" } });
  await approvalAnswer(input(asked), { requestId: "e", kind: "mcp_elicitation", tool: "mcp", reason: "Open https://example.com/docs?q=1 — ok?", decisions: ["approve_once", "deny"], expiresAt: LATER }, NOW);
  assert.equal(asked.approvals[0]?.description, "Open https://example.com/docs?q=1 — ok?");
});

test("a permissions approval shows the exact grant, escaped, before the model's reason", async () => {
  const host = fakeHost({ approval: { decision: "allow-once" } });
  const permissions = { network: { enabled: true }, fileSystem: { write: ["/", "/etc\u202e"] } };
  const answer = await approvalAnswer(input(host), {
    requestId: "call_7", kind: "permissions", callId: "call_7", tool: "permissions", reason: "read one file\u001b[2K\rneeds nothing",
    permissions, decisions: ["approve_once", "deny"], expiresAt: LATER,
  }, NOW);
  assert.deepEqual(answer, { requestId: "call_7", decision: "approve_once" });
  const want = 'Grants exactly: {"network":{"enabled":true},"fileSystem":{"write":["/","/etc\\u202e"]}}. The runtime\'s reason: read one file\\x1b[2K\\rneeds nothing';
  assert.equal(host.approvals[0]?.description, want);
  assert.equal(host.approvals[0]?.detail, want);
  assert.equal(host.approvals[0]?.title, "Allow the cluster's agent harness a permissions request?");
});

test("a permissions approval that does not say what it grants is denied without asking anyone", async () => {
  for (const permissions of [undefined, null, "everything", ["network"]]) {
    const host = fakeHost({ approval: { decision: "allow-always" } });
    const r = { requestId: "call_7", kind: "permissions", tool: "permissions", reason: "needs network", permissions, decisions: ["approve_once", "approve_for_turn", "deny"], expiresAt: LATER };
    assert.equal((await approvalAnswer(input(host), r as unknown as ApprovalRequest, NOW))?.decision, "deny", JSON.stringify(permissions));
    assert.equal(host.approvals.length, 0);
  }
});

test("a question's header, text and options reach OpenClaw escaped, and the chosen option goes back as the runtime's label", async () => {
  const asked: Array<Parameters<AskUser>[0]> = [];
  const ask: AskUser = async (q) => {
    asked.push(q);
    return { status: "answered", answers: { answers: { go: ["Deploy\\x1b[2K\\rto staging"], plain: ["yes"] } } };
  };
  const answer = await userInputAnswer(input(fakeHost()), {
    requestId: "call_9", expiresAt: LATER,
    questions: [
      {
        id: "go", header: "Target\u202e", question: "Where?\u001b[2K\rAnywhere safe?",
        options: [{ label: "Deploy\u001b[2K\rto staging", description: "prod\u2066 really" }, { label: "Stop" }],
      },
      { id: "plain", header: "Confirm", question: "Go on?", options: [{ label: "yes", description: "carry on" }, { label: "no" }] },
    ],
  }, ask, NOW);
  assert.deepEqual(asked[0]?.questions, [
    {
      id: "go", header: "Target\\u202e", question: "Where?\\x1b[2K\\rAnywhere safe?",
      options: [{ label: "Deploy\\x1b[2K\\rto staging", description: "prod\\u2066 really" }, { label: "Stop" }],
    },
    { id: "plain", header: "Confirm", question: "Go on?", options: [{ label: "yes", description: "carry on" }, { label: "no" }] },
  ]);
  assert.deepEqual(answer, { requestId: "call_9", answers: { go: { choices: ["Deploy\u001b[2K\rto staging"] }, plain: { choices: ["yes"] } } });
});

test("two options that show the same are not a choice: which one the person meant is unknown", async () => {
  const ask: AskUser = async () => ({ status: "answered", answers: { answers: { pick: ["a\\rb", "c"] } } });
  const answer = await userInputAnswer(input(fakeHost()), {
    requestId: "call_10", expiresAt: LATER,
    questions: [{ id: "pick", question: "Which?", options: [{ label: "a\rb" }, { label: "a\\rb" }, { label: "c" }] }],
  }, ask, NOW);
  assert.deepEqual(answer, { requestId: "call_10", answers: { pick: { choices: ["c"] } } });
});

test("a command that also asks for permissions needs OpenClaw's policy and a person who saw the grant", async () => {
  const grant = { fileSystem: { write: ["/etc"] } };
  const cases: Array<{ name: string; outcome: unknown; asked?: "allow-once" | "allow-always" | "deny"; want: string; askedAbout: boolean }> = [
    { name: "both allow: the narrower holds", outcome: { blocked: false, params: { command: command.command }, approvalResolution: "allow-always" }, asked: "allow-once", want: "approve_once", askedAbout: true },
    { name: "the person denies the grant", outcome: { blocked: false, params: { command: command.command } }, asked: "deny", want: "deny", askedAbout: true },
    { name: "the policy blocks: nobody is asked", outcome: { blocked: true, kind: "veto", reason: "no" }, asked: "allow-always", want: "deny", askedAbout: false },
  ];
  for (const c of cases) {
    const host = fakeHost({ beforeToolCall: () => c.outcome as never, ...(c.asked !== undefined ? { approval: { decision: c.asked } } : {}) });
    const answer = await approvalAnswer(input(host), { ...command, permissions: grant }, NOW);
    assert.equal(answer?.decision, c.want, c.name);
    assert.equal(host.approvals.length, c.askedAbout ? 1 : 0, c.name);
    if (c.askedAbout) assert.equal(host.approvals[0]?.description, `Grants exactly: {"fileSystem":{"write":["/etc"]}}. Command: /bin/bash -lc 'echo hi'`, c.name);
  }
});
