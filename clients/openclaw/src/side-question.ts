// Side questions (the harness's runSideQuestion: OpenClaw's `/btw`): one
// answer about the current conversation that neither continues its task nor
// enters its history. OpenClaw answers one for its own runtimes with the
// session's sanitized context and no tool execution: the transcript's user
// and assistant texts, a system prompt that keeps the model to the question,
// and a model call with no tools. The plugin asks the same of the cluster:
// the dispatcher's POST …/completions on the session's own AgentSession, so
// the session's harness and model answer (selection, RBAC and capacity as
// for a turn), on an ephemeral thread with an empty tool surface that leaves
// the session's native thread, binding and transcript mirror untouched
// (docs/dispatcher-api.md). A model whose tool isolation the harness cannot
// prove is refused there, never answered with tools.
//
// The context is OpenClaw's own transcript of the session (the cluster's
// turns as the plugin mirrored them, and the gateway's own turns), read with
// readRecentUserAssistantTextForSession: user and assistant texts, the
// newest within the dispatcher's bounds. A trailing user message is the
// request still running (or one that got no answer): it is shown to the
// model as background, never as the question. Images cannot be carried (a
// completion has none): a side question with images is refused, not
// answered without them.
//
// Credentials as for a turn: the cluster harness's own login, or the one
// auth profile OpenClaw's plan forwards, its key sent inline
// (auth-profile.ts). A host key resolved for an API-key route
// (preparedRuntimeAuth.resolvedApiKey) is not sent, as a turn does not send
// the attempt's; the route facts tell the dispatcher what OpenClaw prepared.
import { AgentHarnessPreflightError, type AgentHarnessV2 } from "openclaw/plugin-sdk/agent-harness-runtime";
import { readRecentUserAssistantTextForSession } from "openclaw/plugin-sdk/session-store-runtime";

import { type PlanAuthInput, planAuthProfile, type ResolveKey } from "./auth-profile.js";
import type { DispatcherClient } from "./client.js";
import { completionAnswer, completionFailure } from "./completion-answer.js";
import { type RouteInput, routeFacts, type SupportOnlyFacts } from "./route-facts.js";
import { sessionName } from "./session-name.js";
import type { ConversationText } from "./transcript-marker.js";
import * as wire from "./wire.js";

export type SideQuestionParams = Parameters<NonNullable<AgentHarnessV2["runSideQuestion"]>>[0];
export type SideQuestionResult = Awaited<ReturnType<NonNullable<AgentHarnessV2["runSideQuestion"]>>>;

/** OpenClaw's reader of a session's recent user and assistant texts (injectable for tests). */
export type ReadSessionText = (q: { agentId: string; sessionKey: string; storePath?: string; limit: number }) => Promise<ConversationText[]>;

export type SideQuestionDeps = {
  client: DispatcherClient;
  supportFacts?: SupportOnlyFacts;
  readConversation?: ReadSessionText;
  resolveKey?: ResolveKey;
  nowMs?: () => number;
  logger?: { warn(message: string): void };
};

const OPERATION = "side question";

// The transport api the answer names when OpenClaw prepared no concrete route.
const HARNESS_API = "harness-operator";

/** The system prompt of a side question: the model answers it and nothing else. */
export const SIDE_QUESTION_INSTRUCTIONS = [
  "You answer a side question (/btw) about the conversation that precedes it.",
  "The conversation is background only: it is not your task.",
  "Answer the side question in the last user message and nothing else.",
  "Do not continue, resume or finish any task, plan or request of the conversation, and do not say you will.",
  "You have no tools: do not write tool calls, commands to run, patches or file edits unless the side question asks for one.",
  "Answer briefly when a brief answer will do.",
].join("\n");

/** The last user message: the question, and the request still running as background. */
export function sideQuestionPrompt(question: string, inFlight?: string): string {
  const lines = ["Answer this side question only; leave any unfinished task of the conversation alone."];
  const running = inFlight?.trim();
  if (running) {
    lines.push("", "The conversation's latest request, background only (do not work on it):", "<latest_request>", running, "</latest_request>");
  }
  lines.push("", "<side_question>", question.trim(), "</side_question>");
  return lines.join("\n");
}

/**
 * The conversation as the completion's messages, and the request still
 * running: the texts in order without empty ones, a trailing user message
 * taken apart, the newest within the dispatcher's bounds (reserved bytes:
 * the prompt and instructions).
 */
export function sideQuestionContext(recent: readonly ConversationText[], reservedBytes: number): { messages: wire.CompletionMessage[]; inFlight?: string } {
  const texts = recent.filter((m) => (m.role === "user" || m.role === "assistant") && m.text.trim() !== "");
  let inFlight: string | undefined;
  if (texts.at(-1)?.role === "user") inFlight = texts.pop()?.text;
  let bytes = reservedBytes + (inFlight === undefined ? 0 : Buffer.byteLength(inFlight));
  let start = texts.length;
  // The dispatcher's bounds on a completion: more is its 400.
  while (start > 0 && texts.length - start < wire.MaxCompletionMessages) {
    const size = Buffer.byteLength(texts[start - 1]?.text ?? "");
    if (bytes + size > wire.MaxCompletionBytes) break;
    bytes += size;
    start--;
  }
  const messages = texts.slice(start).map((m) => ({ role: m.role, text: m.text }));
  return inFlight === undefined ? { messages } : { messages, inFlight };
}

function refuse(reason: string, userMessage: string): never {
  throw new AgentHarnessPreflightError(`harness-operator ${OPERATION} refused: ${reason}`, { userMessage });
}

// OpenClaw shows a failed side question only to the chat that asked it
// (its /btw reply): the gateway's log says why too, for its operator.
export async function runSideQuestion(p: SideQuestionParams, deps: SideQuestionDeps): Promise<SideQuestionResult> {
  try {
    return await sideQuestion(p, deps);
  } catch (err) {
    deps.logger?.warn(`harness-operator: the side question on session ${JSON.stringify(p.sessionKey ?? p.sessionId)} failed: ${(err as Error).message}`);
    throw err;
  }
}

async function sideQuestion(p: SideQuestionParams, deps: SideQuestionDeps): Promise<SideQuestionResult> {
  const signal = p.opts?.abortSignal;
  if (p.images !== undefined && p.images.length > 0) {
    refuse(
      `the question carries ${p.images.length} image(s), and the cluster's completion carries text only`,
      "Side questions with images cannot run on the cluster's agent harness; ask without the image.",
    );
  }
  const agentId = p.agentId?.trim();
  const sessionKey = p.sessionKey?.trim();
  if (!agentId || !sessionKey) refuse("OpenClaw named no agent or session key to read the conversation of", "No active session context.");
  const read = deps.readConversation ?? readRecentUserAssistantTextForSession;
  const query: Parameters<ReadSessionText>[0] = { agentId, sessionKey, limit: wire.MaxCompletionMessages + 1 };
  if (p.storePath !== undefined) query.storePath = p.storePath;
  const recent = await read(query);
  const reserved = Buffer.byteLength(SIDE_QUESTION_INSTRUCTIONS) + Buffer.byteLength(sideQuestionPrompt(p.question)) + 256;
  const context = sideQuestionContext(recent, reserved);
  if (context.messages.length === 0 && context.inFlight === undefined) {
    refuse(`OpenClaw's transcript of session ${JSON.stringify(sessionKey)} holds no conversation yet`, "No active session context.");
  }
  const plan = p.preparedRuntimeAuth.plan;
  const body: wire.CompletionRequest = {
    sessionId: p.sessionId,
    sessionKey,
    agentId,
    provider: p.provider,
    modelId: p.model,
    instructions: SIDE_QUESTION_INSTRUCTIONS,
    prompt: sideQuestionPrompt(p.question, context.inFlight),
  };
  if (context.messages.length > 0) body.messages = context.messages;
  const route = routeFacts({ provider: p.provider, modelId: p.model, model: p.runtimeModel, runtimePlan: { auth: plan } } as unknown as RouteInput, deps.supportFacts);
  if (route !== undefined) body.modelProvider = route;
  if (p.resolvedThinkLevel !== undefined) body.thinkLevel = p.resolvedThinkLevel;
  const planInput: PlanAuthInput = { plan, authProfileStore: p.preparedRuntimeAuth.authProfileStore, agentDir: p.agentDir, config: p.cfg };
  if (signal !== undefined) planInput.abortSignal = signal;
  const profile = await planAuthProfile(planInput, OPERATION, "The cluster's agent harness cannot use the selected auth profile for this side question.", deps.resolveKey);
  if (profile !== undefined) body.authProfile = profile;
  signal?.throwIfAborted();
  let response: unknown;
  try {
    response = await deps.client.complete(sessionName(p.sessionId), body, signal);
  } catch (err) {
    throw completionFailure(OPERATION, err);
  }
  const named = { api: plan.modelRoute?.api ?? HARNESS_API, provider: p.provider, model: p.model };
  const answer = completionAnswer(OPERATION, response, named, ["stop", "length"], (deps.nowMs ?? Date.now)());
  const text = answer.assistant.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("");
  return { text: text.trim(), usage: answer.usage };
}
