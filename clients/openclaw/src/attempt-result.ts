// The harness SDK's attempt result for a turn the dispatcher ran, from the turn's
// projection. A claimed turn's failure (a stream `error`, or a stream that
// ended without its outcome) is a failed terminal, never a thrown
// preflight error: OpenClaw does not replay a claimed turn elsewhere.
import type { AgentHarnessAttemptParamsV2, AgentHarnessAttemptResult } from "openclaw/plugin-sdk/agent-harness-runtime";

import { attemptMessages, type MessageParams } from "./attempt-messages.js";
import { DispatcherError } from "./dispatcher-error.js";
import { claimedFailure } from "./errors.js";
import type { TurnProjection } from "./events.js";
import { resolveMediaUrls } from "./native-media.js";
import { settledContext } from "./settled-finalization.js";
import type * as wire from "./wire-shapes.js";

type Result = Extract<AgentHarnessAttemptResult, { terminal: unknown }>;
type Terminal = Result["terminal"];
type ToolErrorSummary = NonNullable<Result["lastToolError"]>;
type Usage = NonNullable<Result["attemptUsage"]>;

export type ResultContext = {
  /** The prepared attempt: its session id, and what the result's messages repeat. */
  params: MessageParams & Pick<AgentHarnessAttemptParamsV2, "sessionId">;
  /** This plugin's harness id, the one OpenClaw selected. */
  harnessId: string;
  /** The attempt was aborted by OpenClaw (params.abortSignal). */
  abortedByHost: boolean;
};

export function attemptResult(p: TurnProjection, ctx: ResultContext): Result {
  let terminal: Terminal;
  let replaySafe = !p.hadPotentialSideEffects;
  let turn: wire.TurnResult | undefined;
  if (p.end?.kind === "result") {
    turn = p.end.result;
    terminal = terminalOf(turn.terminal, ctx.abortedByHost);
  } else if (p.end === undefined && ctx.abortedByHost) {
    // OpenClaw aborted the attempt (and the plugin interrupted the turn)
    // before its result arrived; what ran is unknown.
    terminal = { kind: "aborted", source: "external" };
    replaySafe = false;
  } else {
    const failure = claimedFailure(
      p.end?.error ?? {
        code: "HarnessUnavailable",
        message: "the dispatcher's stream ended before the turn's outcome",
        scope: "",
        retryable: false,
        // The turn was journaled and may have run.
        replaySafe: false,
      },
    );
    terminal = { kind: "failed", source: "prompt", error: failure.error };
    replaySafe = replaySafe && failure.replaySafe;
  }
  const turnMessages = {
    startedAtMs: p.startedAtMs,
    transcript: p.transcript,
    nativeMedia: p.nativeMedia,
    ...(turn === undefined ? {} : { result: turn }),
  };
  const { messagesSnapshot, lastAssistant } = attemptMessages(ctx.params, turnMessages);
  const result: Result = {
    terminal,
    sessionIdUsed: ctx.params.sessionId,
    agentHarnessId: ctx.harnessId,
    messagesSnapshot,
    assistantTexts: turn?.assistantTexts ?? [],
    toolMetas: p.toolMetas,
    lastAssistant,
    didSendViaMessagingTool: false,
    messagingToolSentTexts: [],
    messagingToolSentMediaUrls: [],
    messagingToolSentTargets: [],
    cloudCodeAssistFormatError: false,
    replayMetadata: { hadPotentialSideEffects: !replaySafe, replaySafe },
    itemLifecycle: { ...p.itemLifecycle },
  };
  // What finalizeSettledTurn needs when the turn's tools settled: its
  // transcript, frozen, and (kept by settled-finalization.ts) its run.
  const settled = turn === undefined ? undefined : settledContext(messagesSnapshot, turn.runId ?? "", ctx.params.sessionId);
  if (settled !== undefined) result.settledTurnFinalizationContext = settled;
  const lastToolError = p.lastToolResolution?.lastToolError ?? toolErrorOf(turn?.lastToolError);
  if (lastToolError !== undefined) result.lastToolError = lastToolError;
  if (turn?.usage !== undefined) result.attemptUsage = usageOf(turn.usage);
  if (turn?.classification !== undefined) result.agentHarnessResultClassification = turn.classification;
  // Native artifacts' URLs become where OpenClaw saved them (native-media.ts).
  const media = resolveMediaUrls(turn?.toolMediaUrls, turn?.hostOwnedToolMediaUrls, p.nativeMedia);
  if (media.toolMediaUrls !== undefined) result.toolMediaUrls = media.toolMediaUrls;
  if (media.hostOwnedToolMediaUrls !== undefined) result.hostOwnedToolMediaUrls = media.hostOwnedToolMediaUrls;
  // The harness SDK's runtime artifact: the attested artifact of the cluster's
  // server that ran the turn (only when the attempt asked to capture it).
  const artifact = turn?.runtimeArtifact;
  if (artifact?.id !== undefined && artifact.fingerprint !== undefined) result.runtimeArtifact = { id: artifact.id, fingerprint: artifact.fingerprint };
  return result;
}

function terminalOf(t: wire.Terminal | undefined, abortedByHost: boolean): Terminal {
  switch (t?.kind) {
    case "ok":
      return { kind: "ok" };
    case "aborted":
      return { kind: "aborted", source: abortedByHost ? "external" : "runtime" };
    case "timeout":
      return { kind: "timeout", phase: "prompt", source: "runtime" };
    default:
      // "failed", or a kind a newer dispatcher adds: a failure, not a success.
      return {
        kind: "failed",
        source: "prompt",
        error: new DispatcherError({ code: "TurnFailed", message: t?.message ?? `terminal ${String(t?.kind)}`, scope: "", retryable: false }),
      };
  }
}

function toolErrorOf(e: wire.LastToolError | undefined): ToolErrorSummary | undefined {
  if (e === undefined) return undefined;
  const out: ToolErrorSummary = { toolName: e.tool ?? "" };
  if (e.executionStarted !== undefined) out.executionStarted = e.executionStarted;
  if (e.message !== undefined) out.error = e.message;
  if (e.reason !== undefined) out.errorCode = e.reason;
  if (e.reason === "timeout") out.timedOut = true;
  if (e.mutatingAction !== undefined) out.mutatingAction = e.mutatingAction;
  return out;
}

function usageOf(u: wire.Usage): Usage {
  const out: Usage = {};
  if (u.input !== undefined) out.input = u.input;
  if (u.output !== undefined) out.output = u.output;
  if (u.cachedInput !== undefined) out.cacheRead = u.cachedInput;
  if (u.reasoning !== undefined) out.reasoningTokens = u.reasoning;
  if (u.total !== undefined) out.total = u.total;
  return out;
}
