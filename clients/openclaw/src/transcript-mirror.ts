// The turn's assistant and tool messages, mirrored into OpenClaw's session
// transcript. The harness SDK leaves that mirror to the harness ("keep
// mirroring user-visible assistant/tool output into the OpenClaw
// transcript"): OpenClaw persists the prompt before the attempt, and for an
// embedded run nothing else writes the answer. Without the mirror a chat
// surface (`chat.history`, what OpenClaw's Control UI shows) has the
// person's message and no reply, and a later turn on OpenClaw's own harness
// does not see what the cluster said.
//
// Each message is appended once, in the turn's order, with an idempotency
// key of the turn's run and the message's place in it: a reconnect that
// replays the turn finds its rows instead of adding them again. The answer
// (the result's lastAssistant) being in the transcript is what OpenClaw's
// `assistantTranscriptOwned` says, so that its own delivery mirror does not
// write it a second time.
import {
  type AgentHarnessAttemptParamsV2,
  type AgentHarnessAttemptResult,
  type AgentMessage,
  runAgentHarnessBeforeMessageWriteHook,
} from "openclaw/plugin-sdk/agent-harness-runtime";
import type { appendSessionTranscriptMessageByIdentityStrict } from "openclaw/plugin-sdk/session-transcript-runtime";

type Result = Extract<AgentHarnessAttemptResult, { terminal: unknown }>;

/** OpenClaw's strict transcript append (its session-transcript-runtime, typed in openclaw-session-transcript.d.ts). */
export type AppendTranscriptMessage = typeof appendSessionTranscriptMessageByIdentityStrict;

/** OpenClaw's before_message_write hooks (runAgentHarnessBeforeMessageWriteHook): the message to write, or null for none. */
export type BeforeMessageWrite = typeof runAgentHarnessBeforeMessageWriteHook;

export type MirrorDeps = { append: AppendTranscriptMessage; beforeWrite: BeforeMessageWrite };

/** What the mirror wrote: the assistant texts now in the transcript, in order. */
export type Mirrored = { assistantTexts: string[] };

/** The mirror's OpenClaw: its session-transcript-runtime and hooks. */
export const openClawTranscript: MirrorDeps = {
  append: async (params) => {
    // Loaded with the first mirrored turn: the module opens OpenClaw's session store.
    const sdk = await import("openclaw/plugin-sdk/session-transcript-runtime");
    return sdk.appendSessionTranscriptMessageByIdentityStrict(params);
  },
  beforeWrite: runAgentHarnessBeforeMessageWriteHook,
};

/**
 * Appends the turn's messages after its prompt (the first of
 * messagesSnapshot, which OpenClaw wrote) to the session's transcript, and
 * marks the result's answer as written. Undefined when the session changed
 * under the turn (OpenClaw's rebound): the rest is not written there.
 * A failed append throws; the caller keeps the result as it is.
 */
export async function mirrorTurn(
  params: Pick<AgentHarnessAttemptParamsV2, "sessionId" | "sessionKey" | "agentId" | "runId" | "config" | "prepareAssistantTranscriptMessage">,
  result: Result,
  turnRunId: string,
  deps: MirrorDeps,
): Promise<Mirrored | undefined> {
  const assistantTexts: string[] = [];
  const snapshot = result.messagesSnapshot;
  for (let i = 1; i < snapshot.length; i++) {
    const message = snapshot[i];
    if (message === undefined || !visible(message)) continue;
    const answer = message === result.lastAssistant;
    const idempotencyKey = `harness-operator:${turnRunId}:${i}`;
    // The hooks may rewrite the message or decline it; only the answer goes
    // through the gateway's own preparation (its reply's attachments).
    const hook: Parameters<BeforeMessageWrite>[0] = { message };
    if (params.agentId !== undefined) hook.agentId = params.agentId;
    if (params.sessionKey !== undefined) hook.sessionKey = params.sessionKey;
    if (answer && params.prepareAssistantTranscriptMessage !== undefined) hook.prepareAssistantTranscriptMessage = params.prepareAssistantTranscriptMessage;
    const written = deps.beforeWrite(hook);
    if (written !== null) {
      const req: Parameters<AppendTranscriptMessage>[0] = {
        sessionId: params.sessionId,
        // OpenClaw finds an appended message again by its idempotencyKey.
        message: Object.assign({}, written, { idempotencyKey }),
        idempotencyLookup: "scan",
        updateMode: "inline",
      };
      if (params.agentId !== undefined) req.agentId = params.agentId;
      if (params.sessionKey !== undefined) req.sessionKey = params.sessionKey;
      if (params.runId !== undefined) req.runId = params.runId;
      if (params.config !== undefined) req.config = params.config;
      const outcome = await deps.append(req);
      if (outcome.kind === "rejected") return undefined;
      if (outcome.kind === "result" && written.role === "assistant" && textOf(written) !== "") assistantTexts.push(textOf(written));
    }
    // A declined answer is the transcript's decision, as for OpenClaw's own
    // harnesses: not written, and not written again by its delivery mirror.
    if (answer) {
      result.assistantTranscriptOwned = true;
      result.assistantTranscriptIdempotencyKey = idempotencyKey;
    }
  }
  return { assistantTexts };
}

// What a reader of the transcript sees: an assistant message with text or
// a tool call, a tool's result, a later user message. An assistant message
// whose text is empty says nothing.
function visible(m: AgentMessage): boolean {
  if (m.role !== "assistant") return m.role === "toolResult" || m.role === "user";
  return m.content.some((c) => c.type === "toolCall" || (c.type === "text" && c.text !== ""));
}

function textOf(m: Extract<AgentMessage, { role: "assistant" }>): string {
  return m.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("");
}
