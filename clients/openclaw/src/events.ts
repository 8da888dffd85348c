// TurnProjection maps the dispatcher's turn stream onto the callbacks of
// OpenClaw's prepared attempt and keeps what the attempt result needs.
// One projection per turn; events are applied in stream order, each
// callback awaited before the next event (OpenClaw's reply pipeline expects
// ordered deltas). In the headless CLI only some callbacks are functions
// (reference README): each is called only when it is one.
import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { WireError } from "./dispatcher-error.js";
import { type MediaParams, type NativeMedia, type NativeMediaItem, prepareNativeMedia } from "./native-media.js";
import type { SseEvent } from "./sse.js";
import { visibleDeep } from "./visible-text.js";
import type * as wire from "./wire-shapes.js";

export type AttemptCallbacks = Pick<
  AgentHarnessAttemptParamsV2,
  "onPartialReply" | "onAssistantMessageStart" | "onAgentEvent" | "onReasoningStream" | "onReasoningEnd" | "observeToolTerminal"
> &
  // The media of native artifacts are saved through the host (native-media.ts).
  MediaParams;

type ToolObservation = Parameters<NonNullable<AttemptCallbacks["observeToolTerminal"]>>[0];
type ToolResolution = ReturnType<NonNullable<AttemptCallbacks["observeToolTerminal"]>>;

export type ToolMeta = { toolName: string; toolCallId?: string; isError?: boolean; replaySafe?: boolean };

/** What an event asks the plugin to answer: a host tool call, an approval, a question. */
export type TurnAction =
  | { kind: "tool_call"; call: wire.ToolCall }
  | { kind: "approval"; request: wire.ApprovalRequest }
  | { kind: "user_input"; request: wire.UserInputRequest };

/** How the stream ended: a result, or a claimed failure (`error` event). */
export type StreamEnd = { kind: "result"; result: wire.TurnResult } | { kind: "error"; error: WireError };

export class TurnProjection {
  selected: wire.Selected | undefined;
  /** The last event id seen, for a reconnect with Last-Event-ID. */
  lastEventId: string | undefined;
  end: StreamEnd | undefined;
  readonly toolMetas: ToolMeta[] = [];
  readonly itemLifecycle = { startedCount: 0, completedCount: 0, activeCount: 0 };
  /** A tool may have changed something (it started, and is not known to be read-only). */
  hadPotentialSideEffects = false;
  /** The host's canonical resolution of the latest tool terminal (observeToolTerminal). */
  lastToolResolution: ToolResolution | undefined;
  /**
   * The turn's thread was given the conversation it lacked (a `reseeded`
   * lifecycle event): the gateway messages sent with the turn reached it.
   */
  reseeded = false;
  /** The turn's transcript records in stream order, each with the time it arrived (the attempt result's messages). */
  readonly transcript: Array<{ record: wire.TranscriptRecord; atMs: number }> = [];
  /** The turn's native artifacts (`media` events) by their URL, as OpenClaw saved them or why it did not. */
  readonly nativeMedia = new Map<string, NativeMediaItem>();
  /** When the projection started: the time of the attempt's own prompt. */
  readonly startedAtMs: number;
  private readonly texts = new Map<string, string>();

  constructor(private readonly cb: AttemptCallbacks) {
    this.startedAtMs = Date.now();
  }

  /** Applies one event; what must be answered is returned for the caller to answer. */
  async apply(ev: SseEvent): Promise<TurnAction | undefined> {
    if (ev.id !== undefined) this.lastEventId = ev.id;
    const data: unknown = ev.data === "" ? {} : JSON.parse(ev.data);
    switch (ev.event) {
      case "selected":
        this.selected = data as wire.Selected;
        return undefined;
      case "partial":
        await this.partial(data as wire.Partial);
        return undefined;
      case "agent_event":
        await this.agentEvent(data as wire.AgentEvent);
        return undefined;
      case "tool_call":
        return { kind: "tool_call", call: data as wire.ToolCall };
      case "tool_terminal":
        this.toolTerminal(data as wire.ToolTerminal);
        return undefined;
      case "approval_request":
        await this.nativeRequest(ev.event, data as wire.NativeRequest);
        return { kind: "approval", request: data as wire.ApprovalRequest };
      case "user_input_request":
        await this.nativeRequest(ev.event, data as wire.NativeRequest);
        return { kind: "user_input", request: data as wire.UserInputRequest };
      case "request_resolved":
        await this.nativeRequest(ev.event, data as wire.NativeRequest);
        return undefined;
      case "media":
        await this.media(data as NativeMedia);
        return undefined;
      case "result":
        this.end = { kind: "result", result: data as wire.TurnResult };
        return undefined;
      case "error":
        this.end = { kind: "error", error: data as WireError };
        return undefined;
      case "transcript":
        // No callback: the other events already said it live. Kept for the
        // result's messagesSnapshot (attempt-messages.ts).
        this.transcript.push({ record: data as wire.TranscriptRecord, atMs: Date.now() });
        return undefined;
      default:
        // An event a newer dispatcher adds is not ours to guess.
        return undefined;
    }
  }

  private async partial(p: wire.Partial): Promise<void> {
    const itemId = p.itemId ?? "";
    const delta = p.delta ?? "";
    const before = this.texts.get(itemId);
    if (before === undefined && typeof this.cb.onAssistantMessageStart === "function") {
      await this.cb.onAssistantMessageStart();
    }
    const text = (before ?? "") + delta;
    this.texts.set(itemId, text);
    if (typeof this.cb.onPartialReply === "function") await this.cb.onPartialReply({ text, delta });
  }

  private async agentEvent(e: wire.AgentEvent): Promise<void> {
    const stream = e.stream ?? "lifecycle";
    if (stream === "lifecycle" && e.phase === "reseeded") this.reseeded = true;
    if (stream === "tool" && e.phase === "start") {
      this.itemLifecycle.startedCount++;
      this.itemLifecycle.activeCount++;
    } else if (stream === "tool" && e.phase === "end") {
      this.itemLifecycle.completedCount++;
      this.itemLifecycle.activeCount = Math.max(0, this.itemLifecycle.activeCount - 1);
    }
    if (stream === "reasoning" && e.phase === "delta" && typeof this.cb.onReasoningStream === "function") {
      await this.cb.onReasoningStream({ text: e.text ?? "", isReasoning: true });
    }
    if (stream === "reasoning" && e.phase === "end" && typeof this.cb.onReasoningEnd === "function") {
      await this.cb.onReasoningEnd();
    }
    if (typeof this.cb.onAgentEvent === "function") {
      await this.cb.onAgentEvent({ stream, data: agentEventData(e) });
    }
  }

  private toolTerminal(t: wire.ToolTerminal): void {
    const toolName = t.tool ?? "";
    const failed = t.outcome === "failure";
    const started = t.executionStarted === true;
    // Host tools count as mutating once started (the operator cannot
    // classify them; docs/dispatcher-api.md "lastToolError"); native tools
    // carry the protocol's own facts.
    const mutating = t.native === true ? t.nativeMutation?.mutatingAction === true : started;
    if (mutating) this.hadPotentialSideEffects = true;
    const meta: ToolMeta = { toolName, isError: failed, replaySafe: !mutating };
    if (t.callId !== undefined) meta.toolCallId = t.callId;
    this.toolMetas.push(meta);
    if (typeof this.cb.observeToolTerminal !== "function") return;
    const obs: ToolObservation = {
      toolName,
      arguments: t.arguments,
      executionStarted: started,
      outcome: failed ? "failure" : "success",
    };
    if (t.callId !== undefined) obs.toolCallId = t.callId;
    if (failed) {
      const failure: NonNullable<ToolObservation["failure"]> = { error: t.failure?.message ?? "the tool failed" };
      if (t.failure?.reason !== undefined) failure.errorCode = t.failure.reason;
      if (t.failure?.reason === "timeout") failure.timedOut = true;
      obs.failure = failure;
    }
    if (t.native === true && t.nativeMutation !== undefined) {
      obs.nativeMutation = {
        mutatingAction: t.nativeMutation.mutatingAction === true,
        replaySafe: t.nativeMutation.replaySafe === true,
      };
    }
    this.lastToolResolution = this.cb.observeToolTerminal(obs);
  }

  private async media(m: NativeMedia): Promise<void> {
    if (typeof m.url === "string" && this.nativeMedia.has(m.url)) return;
    const item = await prepareNativeMedia(this.cb, m);
    if (item === undefined) return;
    this.nativeMedia.set(item.url, item);
    if (item.failure === undefined || typeof this.cb.onAgentEvent !== "function") return;
    // Not delivered: said where the turn's other warnings are.
    await this.cb.onAgentEvent({
      stream: "warning",
      data: { phase: "refused", toolCallId: item.callId, name: item.tool, text: `the generated image is not delivered: ${item.failure}` },
    });
  }

  private async nativeRequest(event: string, r: wire.NativeRequest): Promise<void> {
    // Reported as they happen; the caller answers the requests through
    // OpenClaw's host capabilities and user-input helpers (native-requests.ts).
    if (typeof this.cb.onAgentEvent !== "function") return;
    const stream = event === "user_input_request" ? "user_input" : "approval";
    const phase = event === "request_resolved" ? "resolved" : "requested";
    // OpenClaw's approval and question views show these facts: the model's
    // strings go escaped, like in the prompts (visible-text.ts).
    await this.cb.onAgentEvent({ stream, data: { ...(visibleDeep(r) as Record<string, unknown>), phase } });
  }
}

function agentEventData(e: wire.AgentEvent): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (e.phase !== undefined) out["phase"] = e.phase;
  if (e.status !== undefined) out["status"] = e.status;
  if (e.itemId !== undefined) out["itemId"] = e.itemId;
  if (e.callId !== undefined) out["toolCallId"] = e.callId;
  if (e.tool !== undefined) out["name"] = e.tool;
  if (e.text !== undefined) out["text"] = e.text;
  if (e.data !== undefined) out["raw"] = e.data;
  return out;
}
