// The attempt result's messagesSnapshot and lastAssistant: the turn as
// OpenClaw's message shapes (the LLM core's user, assistant and toolResult
// messages). OpenClaw hands messagesSnapshot to its agent_end hook and its
// context engine, reads the settled tool batch from it, and reads
// lastAssistant (as this attempt's assistant) to decide whether a completed
// attempt said anything: without one it retries the attempt.
//
// Built only from what the turn produced: OpenClaw's own prompt (the text it
// recorded, transcriptPrompt ?? prompt, with its images), then the
// dispatcher's transcript records of the turn in stream order — each
// assistant message, the tool calls (host and native) and their results.
// The records of the gateway's own messages (`gateway`) and the turn's
// prompt as the runtime received it are already in OpenClaw's transcript and
// are left out. A tool result carries its images as OpenClaw's inline image
// blocks: a host tool's data: URL images, and the image a native tool
// generated (its `media` event's bytes, whether or not OpenClaw accepted it
// for delivery); an http(s) image URL cannot be inlined and stays out.
// What the dispatcher does not report stays out: no reasoning, no
// per-message usage.
import type { AgentHarnessAttemptParamsV2, AgentHarnessAttemptResult, AgentMessage } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { NativeMediaItem } from "./native-media.js";
import type * as wire from "./wire-shapes.js";

type Result = Extract<AgentHarnessAttemptResult, { terminal: unknown }>;
type AssistantMessage = NonNullable<Result["lastAssistant"]>;
type UserMessage = Extract<AgentMessage, { role: "user" }>;
type ToolResultMessage = Extract<AgentMessage, { role: "toolResult" }>;
type AssistantContent = AssistantMessage["content"][number];
type ToolResultContent = ToolResultMessage["content"][number];
type Usage = AssistantMessage["usage"];

/** What of the prepared attempt the messages repeat. */
export type MessageParams = Pick<AgentHarnessAttemptParamsV2, "prompt" | "transcriptPrompt" | "images" | "provider" | "modelId" | "model">;

/** The turn as the projection saw it. */
export type TurnMessages = {
  startedAtMs: number;
  transcript: ReadonlyArray<{ record: wire.TranscriptRecord; atMs: number }>;
  /** The turn's result, when it ended with one. */
  result?: wire.TurnResult;
  /** The turn's native artifacts (`media` events), by URL. */
  nativeMedia?: ReadonlyMap<string, NativeMediaItem>;
};

export function attemptMessages(p: MessageParams, turn: TurnMessages): { messagesSnapshot: AgentMessage[]; lastAssistant: AssistantMessage | undefined } {
  const messages: AgentMessage[] = [userMessage(p, turn.startedAtMs)];
  let assistant: AssistantMessage | undefined;
  let promptSeen = false;
  const generated = new Map<string, NativeMediaItem>();
  for (const m of turn.nativeMedia?.values() ?? []) if (m.data !== "") generated.set(m.callId, m);
  for (const { record: r, atMs } of turn.transcript) {
    if (r.gateway === true) continue;
    if (r.type === "message" && r.role === "user") {
      // The runtime's copy of this attempt's prompt; any later user message
      // (none today) is the turn's own.
      if (!promptSeen) {
        promptSeen = true;
        continue;
      }
      assistant = undefined;
      messages.push({ role: "user", content: r.text ?? "", timestamp: atMs });
    } else if (r.type === "message" && r.role === "assistant") {
      // One assistant message per runtime message item.
      assistant = assistantMessage(p, { type: "text", text: r.text ?? "" }, "stop", atMs);
      messages.push(assistant);
    } else if (r.type === "tool_call") {
      const call: AssistantContent = { type: "toolCall", id: r.callId ?? "", name: r.tool ?? "", arguments: argumentsOf(r.arguments) };
      // Calls made together are one assistant message, as a model sends them.
      if (assistant?.stopReason === "toolUse") assistant.content.push(call);
      else {
        assistant = assistantMessage(p, call, "toolUse", atMs);
        messages.push(assistant);
      }
    } else if (r.type === "tool_result") {
      assistant = undefined;
      messages.push(toolResult(r, atMs, r.native === true ? generated.get(r.callId ?? "") : undefined));
    }
  }
  const lastAssistant = finalAssistant(messages, turn.result);
  return { messagesSnapshot: messages, lastAssistant };
}

function userMessage(p: MessageParams, atMs: number): UserMessage {
  const text = p.transcriptPrompt ?? p.prompt;
  if (p.images === undefined || p.images.length === 0) return { role: "user", content: text, timestamp: atMs };
  return { role: "user", content: [{ type: "text", text }, ...p.images], timestamp: atMs };
}

function assistantMessage(p: MessageParams, first: AssistantContent, stopReason: AssistantMessage["stopReason"], atMs: number): AssistantMessage {
  return {
    role: "assistant",
    content: [first],
    api: p.model.api,
    provider: p.provider,
    model: p.modelId,
    usage: noUsage(),
    stopReason,
    timestamp: atMs,
  };
}

function toolResult(r: wire.TranscriptRecord, atMs: number, generated: NativeMediaItem | undefined): ToolResultMessage {
  const content: ToolResultContent[] = r.text === undefined || r.text === "" ? [] : [{ type: "text", text: r.text }];
  for (const url of r.images ?? []) {
    const image = dataImage(url);
    if (image !== undefined) content.push(image);
  }
  if (generated !== undefined) content.push({ type: "image", data: generated.data, mimeType: generated.mimeType });
  return {
    role: "toolResult",
    toolCallId: r.callId ?? "",
    toolName: r.tool ?? "",
    content,
    isError: r.isError === true,
    timestamp: atMs,
  };
}

/** A base64 data: URL as an inline image block; anything else (an http(s) URL, other data) is none. */
function dataImage(url: string): ToolResultContent | undefined {
  const m = /^data:(image\/[A-Za-z0-9.+-]+);base64,([A-Za-z0-9+/]*={0,2})$/.exec(url);
  return m === null ? undefined : { type: "image", data: m[2] ?? "", mimeType: m[1] ?? "" };
}

/**
 * The turn's last assistant message with text — its answer — finished the
 * way the turn ended, carrying the turn's usage. None when the turn said
 * nothing: OpenClaw then knows the attempt produced no assistant response.
 */
function finalAssistant(messages: AgentMessage[], result: wire.TurnResult | undefined): AssistantMessage | undefined {
  const last = messages.findLast((m): m is AssistantMessage => m.role === "assistant" && m.content.some((c) => c.type === "text" && c.text !== ""));
  if (last === undefined) return undefined;
  const kind = result?.terminal?.kind;
  if (kind === "aborted" || kind === "timeout") last.stopReason = "aborted";
  else if (kind !== "ok") {
    // failed, or no result at all (a stream error, a stream that ended early)
    last.stopReason = "error";
    const message = result?.terminal?.message;
    if (message !== undefined) last.errorMessage = message;
  }
  if (result?.usage !== undefined) last.usage = usageOf(result.usage);
  return last;
}

// The turn reports its usage once, for all its model calls: it goes on the
// answer and the other messages carry none, so that no sum over the
// messages counts it twice. The dispatcher reports neither cache writes nor
// cost, nor the last call's context size (contextUsage "unavailable").
function usageOf(u: wire.Usage): Usage {
  const usage = noUsage();
  usage.input = u.input ?? 0;
  usage.output = u.output ?? 0;
  usage.cacheRead = u.cachedInput ?? 0;
  usage.totalTokens = u.total ?? usage.input + usage.output + usage.cacheRead;
  return usage;
}

function noUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    contextUsage: { state: "unavailable" },
  };
}

// A tool call's arguments as the model sent them: an object for every tool
// the dispatcher reports; anything else (a malformed call) has none.
function argumentsOf(a: unknown): Record<string, unknown> {
  return a !== null && typeof a === "object" && !Array.isArray(a) ? (a as Record<string, unknown>) : {};
}
