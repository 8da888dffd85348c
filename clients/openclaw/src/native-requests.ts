// What the runtime asks the gateway during a turn, answered the way
// OpenClaw answers its own runtime: a command or file change goes through
// the attempt's runBeforeToolCall (OpenClaw's exec policy, before-tool-call
// hooks and approval prompts, bound by the host to this run); other native
// requests through the attempt's requestApproval; a question through the
// SDK's gateway-question helper, which presents it on OpenClaw's blocking
// reply path. Each answer is the body the caller posts with the turn token.
// Whatever fails or is not answered in time is a denial or no answer: a
// native action never runs because the plugin could not ask.
import {
  type AgentHarnessAttemptParamsV2,
  type AgentHarnessUserInputQuestion,
  runAgentHarnessGatewayQuestion,
} from "openclaw/plugin-sdk/agent-harness-runtime";

import type * as wire from "./wire-shapes.js";

export type NativeRequestInput = Pick<
  AgentHarnessAttemptParamsV2,
  "hostCapabilities" | "abortSignal" | "sessionKey" | "agentId" | "runId" | "onBlockReply" | "onPartialReply"
>;

/** Asks the user through OpenClaw (runAgentHarnessGatewayQuestion). */
export type AskUser = typeof runAgentHarnessGatewayQuestion;

// The dispatcher's tool timeout when a request carries no expiresAt.
const DEFAULT_WAIT_MS = 120_000;

/** The answer to an approval_request; undefined when it names no request. */
export async function approvalAnswer(p: NativeRequestInput, r: wire.ApprovalRequest, now = Date.now()): Promise<wire.ApprovalAnswer | undefined> {
  if (r.requestId === undefined || r.requestId === "") return undefined;
  const offered = r.decisions ?? ["deny"];
  const wait = waitFor(r.expiresAt, now, p.abortSignal);
  let decision: wire.ApprovalDecision;
  try {
    decision = r.kind === "command" || r.kind === "file_change" ? await policyDecision(p, r, wait.signal) : await askDecision(p, r, offered, wait);
  } catch {
    decision = "deny";
  }
  // Only a decision the runtime offered is an answer; a turn-wide approval
  // it does not offer narrows to a single one.
  if (!offered.includes(decision)) decision = decision === "approve_for_turn" && offered.includes("approve_once") ? "approve_once" : "deny";
  return { requestId: r.requestId, decision };
}

async function policyDecision(p: NativeRequestInput, r: wire.ApprovalRequest, signal: AbortSignal): Promise<wire.ApprovalDecision> {
  const command = r.kind === "command";
  const params = command ? { command: r.command ?? "" } : { paths: r.changedPaths ?? [] };
  const outcome = await p.hostCapabilities.runBeforeToolCall({
    toolName: r.tool ?? (command ? "exec" : "apply_patch"),
    params,
    signal,
    ...(r.callId !== undefined ? { toolCallId: r.callId } : {}),
    ...(r.cwd !== undefined ? { nativeOperation: { cwd: r.cwd } } : {}),
  });
  if (outcome.blocked) return "deny";
  // A hook that rewrote the action cannot be honoured: the runtime runs the
  // action it asked about, so a changed one is denied rather than approved.
  if (outcome.params !== undefined && JSON.stringify(outcome.params) !== JSON.stringify(params)) return "deny";
  return outcome.approvalResolution === "allow-always" ? "approve_for_turn" : "approve_once";
}

async function askDecision(
  p: NativeRequestInput,
  r: wire.ApprovalRequest,
  offered: readonly wire.ApprovalDecision[],
  wait: { signal: AbortSignal; timeoutMs: number },
): Promise<wire.ApprovalDecision> {
  const caps = p.hostCapabilities;
  const asked = await caps.requestApproval({
    signal: wait.signal,
    title: `Allow the cluster's agent harness a ${r.kind ?? "native"} request?`,
    description: r.reason ?? r.command ?? `${r.tool ?? "a native tool"} asks for approval`,
    severity: "warning",
    toolName: r.tool ?? r.kind ?? "native",
    ...(r.callId !== undefined ? { toolCallId: r.callId } : {}),
    allowedDecisions: offered.includes("approve_for_turn") ? ["allow-once", "allow-always", "deny"] : ["allow-once", "deny"],
    timeoutMs: wait.timeoutMs,
  });
  let decision = asked?.decision;
  if ((decision === undefined || decision === null) && asked?.id !== undefined) {
    decision = (await caps.waitForApproval({ approvalId: asked.id, timeoutMs: wait.timeoutMs, signal: wait.signal }))?.decision;
  }
  if (decision === "allow-once") return "approve_once";
  if (decision === "allow-always") return "approve_for_turn";
  return "deny";
}

/** The answer to a user_input_request; undefined when it names no request. No answer is `answers: {}`. */
export async function userInputAnswer(
  p: NativeRequestInput,
  r: wire.UserInputRequest,
  ask: AskUser = runAgentHarnessGatewayQuestion,
  now = Date.now(),
): Promise<wire.UserInputAnswer | undefined> {
  if (r.requestId === undefined || r.requestId === "") return undefined;
  const questions = r.questions ?? [];
  const none = { requestId: r.requestId, answers: {} };
  // OpenClaw's questions belong to a session key; without one nobody can be asked.
  if (p.sessionKey === undefined || questions.length === 0) return none;
  const wait = waitFor(r.expiresAt, now, p.abortSignal);
  try {
    const res = await ask({
      questions: questions.map(sdkQuestion),
      sessionKey: p.sessionKey,
      runId: p.runId,
      timeoutMs: wait.timeoutMs,
      signal: wait.signal,
      delivery: delivery(p),
      ...(p.agentId !== undefined ? { agentId: p.agentId } : {}),
    });
    return res.status === "answered" ? { requestId: r.requestId, answers: wireAnswers(questions, res.answers.answers) } : none;
  } catch {
    return none;
  }
}

// The reply callbacks OpenClaw gave the attempt (the headless CLI gives none).
function delivery(p: NativeRequestInput): Parameters<AskUser>[0]["delivery"] {
  const out: Parameters<AskUser>[0]["delivery"] = { hostCapabilities: p.hostCapabilities };
  if (p.onBlockReply !== undefined) out.onBlockReply = p.onBlockReply;
  if (p.onPartialReply !== undefined) out.onPartialReply = p.onPartialReply;
  return out;
}

function sdkQuestion(q: wire.UserInputQuestion): AgentHarnessUserInputQuestion {
  const out: AgentHarnessUserInputQuestion = { id: q.id, header: q.header ?? "", question: q.question ?? "" };
  if (q.options !== undefined && q.options.length > 0) {
    out.options = q.options.map((o) => (o.description !== undefined ? { label: o.label, description: o.description } : { label: o.label }));
  }
  if (q.allowOther === true) out.isOther = true;
  if (q.secret === true) out.isSecret = true;
  return out;
}

// OpenClaw answers each question with strings: an option's label is a
// choice, anything else free text, which the dispatcher accepts only where
// the question allows it (allowOther, or no options).
function wireAnswers(questions: readonly wire.UserInputQuestion[], given: Record<string, string[]>): wire.UserInputAnswer["answers"] {
  const out: wire.UserInputAnswer["answers"] = {};
  for (const q of questions) {
    const strs = given[q.id];
    if (strs === undefined) continue;
    const labels = new Set((q.options ?? []).map((o) => o.label));
    const choices = strs.filter((s) => labels.has(s));
    const free = strs.filter((s) => !labels.has(s) && s !== "");
    const value: { choices?: string[]; text?: string } = {};
    if (choices.length > 0) value.choices = choices;
    if (free.length > 0 && (q.allowOther === true || labels.size === 0)) value.text = free.join("\n");
    if (value.choices !== undefined || value.text !== undefined) out[q.id] = value;
  }
  return out;
}

// Waiting ends when the dispatcher stops waiting (expiresAt) or the attempt is aborted.
function waitFor(expiresAt: string | undefined, now: number, abort: AbortSignal | undefined): { signal: AbortSignal; timeoutMs: number } {
  const until = expiresAt === undefined ? Number.NaN : Date.parse(expiresAt);
  const timeoutMs = Number.isFinite(until) ? Math.max(0, until - now) : DEFAULT_WAIT_MS;
  const timer = AbortSignal.timeout(timeoutMs);
  return { signal: abort === undefined ? timer : AbortSignal.any([abort, timer]), timeoutMs };
}
