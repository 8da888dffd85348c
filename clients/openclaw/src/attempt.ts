// One prepared attempt on the cluster, around its turn stream: before the
// turn, the tools the host built and the gateway's turns since the
// dispatcher's last one go into the turn's body; during it, each host tool
// call, approval and question is answered with the turn token; after it, the
// turn's messages are mirrored into OpenClaw's transcript, the transcript
// marker moves on and OpenClaw's agent-end side effects run.
import {
  type AgentHarnessAttemptParamsV2,
  type AgentHarnessAttemptResult,
  AgentHarnessPreflightError,
  type AnyAgentTool,
  runAgentEndSideEffects,
  runAgentHarnessGatewayQuestion,
} from "openclaw/plugin-sdk/agent-harness-runtime";
import { readRecentUserAssistantTextForSession } from "openclaw/plugin-sdk/session-store-runtime";

import { forwardedAuthProfile } from "./auth-profile.js";
import type { DispatcherClient, TurnStream } from "./client.js";
import { DispatcherError } from "./dispatcher-error.js";
import type { TurnAction, TurnProjection } from "./events.js";
import { type AskUser, approvalAnswer, userInputAnswer } from "./native-requests.js";
import { type HostToolMiddleware, hostToolMiddleware } from "./tool-result-middleware.js";
import { hostTools, runHostTool, toolSurface } from "./tools.js";
import { type Mirrored, type MirrorDeps, mirrorTurn } from "./transcript-mirror.js";
import {
  gatewayTranscript,
  MAX_MESSAGES,
  type MarkerStore,
  nextMarker,
  type ReadConversation,
  type TranscriptMarker,
} from "./transcript-marker.js";
import type { Logger } from "./session-hooks.js";
import type { SupportOnlyFacts } from "./route-facts.js";
import { type GatewayTranscript, type TurnAdditions, type TurnRequest, turnRequest } from "./turn-request.js";

export type AttemptDeps = {
  /** The per-session transcript markers (OpenClaw's plugin state store; one process's memory without it). */
  markers?: MarkerStore;
  readConversation?: ReadConversation;
  askUser?: AskUser;
  /** OpenClaw's agent_end hook and research capture (runAgentEndSideEffects). */
  agentEnd?: typeof runAgentEndSideEffects;
  /** The clock of OpenClaw's transcript timestamps (Date.now): the marker's window starts at a turn's start. */
  now?: () => number;
  /** Where a marker or transcript that could not be read or written is reported (OpenClaw's plugin logger). */
  logger?: Logger;
  /**
   * OpenClaw's transcript append and before_message_write hooks, for the
   * turn's mirror (openClawTranscript, from the plugin's entry). Without
   * them nothing is mirrored: a harness made in a test writes no OpenClaw state.
   */
  mirror?: MirrorDeps;
};

/** AttemptDeps with every default filled in; the mirror stays optional. */
type FilledDeps = Required<Omit<AttemptDeps, "mirror">> & Pick<AttemptDeps, "mirror">;

/** Where answers of the running turn go. */
export type TurnTarget = { client: DispatcherClient; session: string; runId: string };

// Some of the window's messages are the dispatcher's own turns, left out
// after reading: read that many more than are ever sent.
const READ_LIMIT = MAX_MESSAGES * 2;

export class Attempt {
  private readonly startedAtMs: number;
  private readonly started = performance.now();

  private constructor(
    private readonly params: AgentHarnessAttemptParamsV2,
    private readonly deps: FilledDeps,
    private readonly tools: AnyAgentTool[],
    private turnBody: TurnRequest,
    private readonly marker: TranscriptMarker | undefined,
    private readonly middleware: HostToolMiddleware,
  ) {
    this.startedAtMs = deps.now();
  }

  static async prepare(params: AgentHarnessAttemptParamsV2, deps: AttemptDeps & { markers: MarkerStore; supportFacts?: SupportOnlyFacts }): Promise<Attempt> {
    // The harness SDK: no runtime path operates without the host capability; the
    // tools, approvals and questions of the turn all go through it.
    if (typeof params.hostCapabilities?.runBeforeToolCall !== "function") {
      throw new AgentHarnessPreflightError("harness-operator: the attempt carries no hostCapabilities (an OpenClaw older than the plugin's pluginApi floor?)");
    }
    const tools = toolSurface(params);
    const full: FilledDeps = {
      markers: deps.markers,
      readConversation: deps.readConversation ?? readRecentUserAssistantTextForSession,
      askUser: deps.askUser ?? runAgentHarnessGatewayQuestion,
      agentEnd: deps.agentEnd ?? runAgentEndSideEffects,
      now: deps.now ?? Date.now,
      logger: deps.logger ?? { warn: () => undefined },
    };
    if (deps.mirror !== undefined) full.mirror = deps.mirror;
    // A marker or transcript that cannot be read leaves the turn without the
    // gateway's messages: the session's thread continues as the dispatcher
    // left it, rather than the turn failing.
    const warn = (what: string) => (err: unknown): undefined => {
      full.logger.warn(`harness-operator: ${what} of session ${params.sessionId} failed; the turn goes without the gateway's messages: ${(err as Error).message}`);
      return undefined;
    };
    const marker = await full.markers.lookup(params.sessionId).catch(warn("reading the transcript marker"));
    const transcript = marker === undefined ? undefined
      : await readGatewayTranscript(params, marker, full.readConversation).catch(warn("reading OpenClaw's transcript"));
    const add: TurnAdditions = { tools: hostTools(tools) };
    if (deps.supportFacts !== undefined) add.supportFacts = deps.supportFacts;
    if (transcript !== undefined) add.gatewayTranscript = transcript;
    const authProfile = await forwardedAuthProfile(params);
    if (authProfile !== undefined) add.authProfile = authProfile;
    return new Attempt(params, full, tools, turnRequest(params, add), marker, hostToolMiddleware(params));
  }

  /** The turn's body: the same for every reconnect of the turn. */
  get body(): TurnRequest {
    return this.turnBody;
  }

  /**
   * Starts the turn with send (a post of the body, with its retries). When
   * the session's last turn is not the marker's (another client ran one, or
   * the plugin's state was lost), the dispatcher
   * refuses the gateway's messages with SessionMismatch before anything ran;
   * the turn is then started once more without them, so that the session is
   * not stuck behind a marker that can no longer be right. Those messages
   * do not reach the cluster's thread.
   */
  async start(send: (body: TurnRequest) => Promise<TurnStream>): Promise<TurnStream> {
    try {
      return await send(this.turnBody);
    } catch (err) {
      if (!(err instanceof DispatcherError && err.wire.code === "SessionMismatch" && this.turnBody.gatewayTranscript !== undefined)) throw err;
      const { gatewayTranscript: _refused, ...rest } = this.turnBody;
      this.turnBody = rest;
      return send(this.turnBody);
    }
  }

  /**
   * Answers what the turn asked; a request no longer waiting changes nothing
   * (its resolution is in the stream). Once signal aborts (OpenClaw's abort,
   * or the turn ended) the tool or question is told, and nothing is posted.
   */
  async answer(action: TurnAction, token: string | undefined, to: TurnTarget, signal: AbortSignal): Promise<void> {
    if (token === undefined) return;
    const post = async (send: () => Promise<void>): Promise<void> => {
      if (!signal.aborted) await send().catch(() => undefined);
    };
    // The native-request helpers wait on the attempt's abortSignal.
    const asked = { ...this.params, abortSignal: signal };
    switch (action.kind) {
      case "tool_call": {
        if (action.call.callId === undefined) return;
        const body = await runHostTool(this.tools, action.call, signal, this.middleware);
        await post(() => to.client.postToolResult(to.session, to.runId, token, body));
        return;
      }
      case "approval": {
        const body = await approvalAnswer(asked, action.request);
        if (body !== undefined) await post(() => to.client.postApproval(to.session, to.runId, token, body));
        return;
      }
      case "user_input": {
        const body = await userInputAnswer(asked, action.request, this.deps.askUser);
        if (body !== undefined) await post(() => to.client.postUserInput(to.session, to.runId, token, body));
        return;
      }
    }
  }

  /**
   * After the turn: its messages go into OpenClaw's transcript, the marker
   * moves on when the turn was journaled, and OpenClaw's agent-end side
   * effects run.
   */
  async finish(p: TurnProjection, result: AgentHarnessAttemptResult, runId: string): Promise<void> {
    const mirrored = "terminal" in result ? await this.mirror(result, runId) : undefined;
    if (p.selected !== undefined) {
      // The turn's own texts in the transcript (what the mirror wrote), which
      // the next turn does not send back as the gateway's.
      const replies = mirrored?.assistantTexts ?? result.assistantTexts;
      const texts: Array<{ role: "user" | "assistant"; text: string }> = [{ role: "user", text: this.params.transcriptPrompt ?? this.params.prompt }];
      for (const text of replies) texts.push({ role: "assistant", text });
      const next = nextMarker(this.marker, {
        runId,
        startedAtMs: this.startedAtMs,
        texts,
        sentMessages: this.body.gatewayTranscript !== undefined,
        reseeded: p.reseeded,
      });
      // A marker that cannot be written costs the next turn the gateway's
      // messages, never this turn's result.
      await this.deps.markers.register(this.params.sessionId, next).catch((err: unknown) => {
        this.deps.logger.warn(`harness-operator: writing the transcript marker of session ${this.params.sessionId} failed; the next turn goes without the gateway's messages: ${(err as Error).message}`);
      });
    }
    this.agentEnd(result);
  }

  // A mirror that fails leaves the transcript without (some of) the turn's
  // messages, never the turn without its result: the answer is delivered
  // as it is, and the result does not claim it is in the transcript.
  private async mirror(result: Extract<AgentHarnessAttemptResult, { terminal: unknown }>, runId: string): Promise<Mirrored | undefined> {
    if (this.deps.mirror === undefined) return undefined;
    try {
      const mirrored = await mirrorTurn(this.params, result, runId, this.deps.mirror);
      if (mirrored === undefined) this.deps.logger.warn(`harness-operator: session ${this.params.sessionId} changed during run ${runId}; its messages were not mirrored into OpenClaw's transcript`);
      return mirrored;
    } catch (err) {
      delete result.assistantTranscriptOwned;
      delete result.assistantTranscriptIdempotencyKey;
      this.deps.logger.warn(`harness-operator: mirroring run ${runId} into OpenClaw's transcript of session ${this.params.sessionId} failed: ${(err as Error).message}`);
      return undefined;
    }
  }

  private agentEnd(result: AgentHarnessAttemptResult): void {
    const p = this.params;
    const ok = "terminal" in result && result.terminal.kind === "ok";
    const event: Parameters<typeof runAgentEndSideEffects>[0]["event"] = {
      runId: p.runId,
      messages: result.messagesSnapshot,
      success: ok,
      durationMs: Math.round(performance.now() - this.started),
    };
    if (!ok && "terminal" in result) event.error = `terminal ${result.terminal.kind}`;
    const ctx: Parameters<typeof runAgentEndSideEffects>[0]["ctx"] = { runId: p.runId, sessionId: p.sessionId, modelProviderId: p.provider, modelId: p.modelId };
    if (p.agentId !== undefined) ctx.agentId = p.agentId;
    if (p.sessionKey !== undefined) ctx.sessionKey = p.sessionKey;
    if (p.workspaceDir !== undefined) ctx.workspaceDir = p.workspaceDir;
    if (p.trigger !== undefined) ctx.trigger = p.trigger;
    if (p.jobId !== undefined) ctx.jobId = p.jobId;
    if (p.messageProvider !== undefined) ctx.messageProvider = p.messageProvider;
    if (p.config !== undefined) ctx.config = p.config;
    // Its failures never alter the completed attempt (the harness SDK).
    try {
      this.deps.agentEnd({ event, ctx });
    } catch {
      // Nothing to do: the hook's failure is OpenClaw's to log.
    }
  }
}

async function readGatewayTranscript(
  p: AgentHarnessAttemptParamsV2,
  marker: TranscriptMarker,
  read: ReadConversation,
): Promise<GatewayTranscript | undefined> {
  if (p.agentId === undefined || p.sessionKey === undefined) return undefined;
  const recent = await read({ agentId: p.agentId, sessionKey: p.sessionKey, minTimestampMs: marker.sinceMs, limit: READ_LIMIT });
  return gatewayTranscript(marker, recent, p.transcriptPrompt ?? p.prompt);
}
