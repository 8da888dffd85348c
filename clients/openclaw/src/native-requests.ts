// What the runtime asks the gateway during a turn, answered the way
// OpenClaw answers its own runtime: a command or file change goes through
// the attempt's runBeforeToolCall (OpenClaw's before-tool-call hooks,
// trusted tool policies and their approval prompts, bound by the host to
// this run; its command allowlist is exec-policy.ts's concern); other native
// requests through the attempt's requestApproval; a question through the
// SDK's gateway-question helper, which presents it on OpenClaw's blocking
// reply path. Each answer is the body the caller posts with the turn token.
// Whatever fails or is not answered in time is a denial or no answer: a
// native action never runs because the plugin could not ask.
//
// Every string the runtime sends is the model's, and OpenClaw shows it to
// people: it is handed over escaped (visible-text.ts), so that a control
// character or a bidi override cannot hide or rewrite what a person approves.
// A permissions approval shows the grant it gives, in full.
import {
  type AgentHarnessAttemptParamsV2,
  type AgentHarnessUserInputQuestion,
  embeddedAgentLog,
  runAgentHarnessGatewayQuestion,
} from "openclaw/plugin-sdk/agent-harness-runtime";

import { visible, visibleJson } from "./visible-text.js";
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
    if (r.kind === "command" || r.kind === "file_change") {
      decision = await policyDecision(p, r, wait.signal);
      // A command that also asks for permissions grants them when approved.
      // OpenClaw's exec policy and prompt show the command, not the grant:
      // a person is asked about the grant too, and the narrower answer holds.
      if (decision !== "deny" && r.permissions !== undefined) decision = narrower(decision, await askDecision(p, r, offered, wait));
    } else {
      decision = await askDecision(p, r, offered, wait);
    }
  } catch {
    decision = "deny";
  }
  // Only a decision the runtime offered is an answer; a turn-wide approval
  // it does not offer narrows to a single one.
  if (!offered.includes(decision)) decision = decision === "approve_for_turn" && offered.includes("approve_once") ? "approve_once" : "deny";
  return { requestId: r.requestId, decision };
}

function narrower(a: wire.ApprovalDecision, b: wire.ApprovalDecision): wire.ApprovalDecision {
  if (a === "deny" || b === "deny") return "deny";
  return a === "approve_once" || b === "approve_once" ? "approve_once" : a;
}

async function policyDecision(p: NativeRequestInput, r: wire.ApprovalRequest, signal: AbortSignal): Promise<wire.ApprovalDecision> {
  const command = r.kind === "command";
  // OpenClaw's policy, its hooks and its prompt all read these params: the
  // escaped text is what a person sees and what the policy decides on.
  // Escaping adds no separator (no "/", no ";", no line break), so a command
  // keeps its words and a path its segments.
  const params = command ? { command: visible(r.command ?? "", { keepLineBreaks: true }) } : { paths: (r.changedPaths ?? []).map((path) => visible(path)) };
  const outcome = await p.hostCapabilities.runBeforeToolCall({
    toolName: visible(r.tool ?? (command ? "exec" : "apply_patch")),
    params,
    signal,
    ...(r.callId !== undefined ? { toolCallId: r.callId } : {}),
    ...(r.cwd !== undefined ? { nativeOperation: { cwd: visible(r.cwd) } } : {}),
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
  const description = approvalDescription(r);
  // A grant nobody can see is not asked about: the runtime would get
  // whatever it asked for.
  if (description === undefined) return "deny";
  const asked = await caps.requestApproval({
    signal: wait.signal,
    title: `Allow the cluster's agent harness a ${visible(r.kind ?? "native")} request?`,
    description,
    detail: description,
    severity: "warning",
    toolName: visible(r.tool ?? r.kind ?? "native"),
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

// What the person reads before deciding, escaped. A request that grants
// permissions names the grant first (a channel that shortens the text cuts
// the model's reason, not the grant). A grant that is not an object, or a
// permissions request without one, has no description: nobody can see
// what approving it would give.
function approvalDescription(r: wire.ApprovalRequest): string | undefined {
  const grant: unknown = r.permissions;
  if (grant !== undefined || r.kind === "permissions") {
    if (grant === undefined || grant === null || typeof grant !== "object" || Array.isArray(grant)) return undefined;
    const command = r.command !== undefined ? ` Command: ${visible(r.command, { keepLineBreaks: true })}` : "";
    const reason = r.reason !== undefined && r.reason !== "" ? ` The runtime's reason: ${visible(r.reason)}` : "";
    return `Grants exactly: ${visibleJson(grant)}.${command}${reason}`;
  }
  if (r.reason !== undefined) return visible(r.reason);
  if (r.command !== undefined) return visible(r.command, { keepLineBreaks: true });
  return `${visible(r.tool ?? "a native tool")} asks for approval`;
}

/** The answer to a user_input_request; undefined when it names no request. No answer is `answers: {}`. */
export async function userInputAnswer(
  p: NativeRequestInput,
  r: wire.UserInputRequest,
  ask: AskUser = runAgentHarnessGatewayQuestion,
  now = Date.now(),
  warn: (message: string) => void = (message) => embeddedAgentLog.warn(message),
): Promise<wire.UserInputAnswer | undefined> {
  if (r.requestId === undefined || r.requestId === "") return undefined;
  const questions = r.questions ?? [];
  const none = { requestId: r.requestId, answers: {} };
  // OpenClaw's questions belong to a session key; without one nobody can be asked.
  if (p.sessionKey === undefined || questions.length === 0) return none;
  const shaped = gatewayQuestions(questions);
  if ("refused" in shaped) {
    warn(`harness-operator: the question ${visible(r.requestId)} of run ${p.runId} cannot be put to OpenClaw (${shaped.refused}); the runtime gets no answer`);
    return none;
  }
  const wait = waitFor(r.expiresAt, now, p.abortSignal);
  try {
    const res = await ask({
      questions: shaped.asked.map((q) => q.shown),
      sessionKey: p.sessionKey,
      runId: p.runId,
      timeoutMs: wait.timeoutMs,
      signal: wait.signal,
      delivery: delivery(p),
      ...(p.agentId !== undefined ? { agentId: p.agentId } : {}),
    });
    return res.status === "answered" ? { requestId: r.requestId, answers: wireAnswers(shaped.asked, res.answers.answers) } : none;
  } catch (err) {
    // OpenClaw refused the question or lost it: nobody is asked, and the
    // runtime hears so now rather than at its timeout.
    warn(`harness-operator: asking the question ${visible(r.requestId)} of run ${p.runId} through OpenClaw failed; the runtime gets no answer: ${(err as Error).message}`);
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

/** A runtime question as OpenClaw is asked it: shown is what OpenClaw gets, q what the runtime asked. */
export type AskedQuestion = { q: wire.UserInputQuestion; shown: AgentHarnessUserInputQuestion };

// OpenClaw's Gateway records a question only in its own shape (question.request,
// 2026.9.6): one to three questions, each with an id of lowercase letters,
// digits and "_" that starts with a letter, a header of at most 12
// characters, a text, and at most four options with labels. The runtime's
// model picks ids and headers freely, and a question OpenClaw refuses is
// never shown to anyone. So an id outside that alphabet is asked under one
// made from it (and its answer mapped back), a long header is shortened (the
// question's text carries its meaning); what cannot be shown whole (more
// questions or options, an empty text or label) is refused, with the reason.
const MAX_QUESTIONS = 3;
const MAX_OPTIONS = 4;
const MAX_HEADER = 12;
const GATEWAY_ID = /^[a-z][a-z0-9_]*$/;

/** The questions as OpenClaw's Gateway takes them, or why they cannot be asked there. */
export function gatewayQuestions(questions: readonly wire.UserInputQuestion[]): { asked: AskedQuestion[] } | { refused: string } {
  if (questions.length > MAX_QUESTIONS) return { refused: `OpenClaw asks at most ${MAX_QUESTIONS} questions at once; the runtime asked ${questions.length}` };
  const taken = new Set(questions.map((q) => q.id).filter((id) => GATEWAY_ID.test(id)));
  const asked: AskedQuestion[] = [];
  for (const q of questions) {
    const name = `question ${JSON.stringify(visible(q.id))}`;
    const options = q.options ?? [];
    if (options.length > MAX_OPTIONS) return { refused: `${name} has ${options.length} options; OpenClaw shows at most ${MAX_OPTIONS}` };
    if (options.some((o) => o.label === "")) return { refused: `${name} has an option without a label` };
    if ((q.question ?? "") === "") return { refused: `${name} has no text` };
    const shown = sdkQuestion(q, GATEWAY_ID.test(q.id) ? q.id : gatewayId(q.id, taken));
    asked.push({ q, shown });
  }
  return { asked };
}

// An id OpenClaw takes, made from the runtime's (lowercase, every other
// character "_", "q_" before one that does not start with a letter) and not
// taken by another question of the request.
function gatewayId(id: string, taken: Set<string>): string {
  let base = id.toLowerCase().replace(/[^a-z0-9_]/g, "_");
  if (!/^[a-z]/.test(base)) base = `q_${base}`;
  let out = base;
  for (let n = 2; taken.has(out); n++) out = `${base}_${n}`;
  taken.add(out);
  return out;
}

// The question as OpenClaw shows it: every text escaped, the header within
// OpenClaw's bound. The id is not shown; it names the answer.
function sdkQuestion(q: wire.UserInputQuestion, id: string): AgentHarnessUserInputQuestion {
  const out: AgentHarnessUserInputQuestion = { id, header: shortHeader(visible(q.header ?? "")), question: visible(q.question ?? "") };
  if (q.options !== undefined && q.options.length > 0) {
    out.options = q.options.map((o) => (o.description !== undefined ? { label: visible(o.label), description: visible(o.description) } : { label: visible(o.label) }));
  }
  if (q.allowOther === true) out.isOther = true;
  if (q.secret === true) out.isSecret = true;
  return out;
}

// A header cut to OpenClaw's 12 characters ends in "…"; a surrogate pair is never split.
function shortHeader(header: string): string {
  if (header.length <= MAX_HEADER) return header;
  let cut = MAX_HEADER - 1;
  if (/[\ud800-\udbff]/.test(header.charAt(cut - 1))) cut--;
  return `${header.slice(0, cut).trimEnd()}…`;
}

// OpenClaw answers each question, under the id it was asked by, with
// strings: an option's label as it was shown is a choice (sent back as the
// runtime's own label), anything else free text, which the dispatcher
// accepts only where the question allows it (allowOther, or no options).
// Two labels that show the same are neither: which one the person meant is
// unknown.
function wireAnswers(asked: readonly AskedQuestion[], given: Record<string, string[]>): wire.UserInputAnswer["answers"] {
  const out: wire.UserInputAnswer["answers"] = {};
  for (const { q, shown } of asked) {
    const strs = given[shown.id];
    if (strs === undefined) continue;
    const labels = shownLabels(q);
    const choices: string[] = [];
    const free: string[] = [];
    for (const str of strs) {
      if (labels.has(str)) {
        const label = labels.get(str);
        if (label !== undefined) choices.push(label);
      } else if (str !== "") {
        free.push(str);
      }
    }
    const value: { choices?: string[]; text?: string } = {};
    if (choices.length > 0) value.choices = choices;
    if (free.length > 0 && (q.allowOther === true || labels.size === 0)) value.text = free.join("\n");
    if (value.choices !== undefined || value.text !== undefined) out[q.id] = value;
  }
  return out;
}

// Each option's label as shown → the runtime's label; undefined where two show the same.
function shownLabels(q: wire.UserInputQuestion): Map<string, string | undefined> {
  const out = new Map<string, string | undefined>();
  for (const o of q.options ?? []) {
    const shown = visible(o.label);
    out.set(shown, out.has(shown) ? undefined : o.label);
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
