// The gateway's own turns since the dispatcher's last one (the turn's
// `gatewayTranscript`), and the marker that says where they start. The
// marker is the plugin's per-session state, a file in OpenClaw's state
// directory (marker-files.ts), keyed by the OpenClaw session id:
//   - afterRunId: the last turn the dispatcher journaled for the session
//     from this gateway (what its status.lastTurn.runId is);
//   - sinceMs: the OpenClaw transcript time from which messages are still to
//     be sent to the cluster;
//   - ownDigests: digests of the texts of the dispatcher's own turns in that
//     window (their prompts, which OpenClaw saves, and replies, which the
//     plugin mirrors into its transcript), so that they are not sent back
//     as the gateway's.
// A journaled turn that carried messages but had no `reseeded` event did not
// give them to its thread (docs/dispatcher-api.md "Switching runtime between
// turns"): the marker then names that turn and keeps the window, and the
// next turn sends them again.
import { createHash } from "node:crypto";

import type { GatewayTranscript } from "./turn-request.js";

export type TranscriptMarker = { afterRunId: string; sinceMs: number; ownDigests: string[] };

/** The part of OpenClaw's keyed plugin-state store the markers use. */
export type MarkerStore = {
  lookup(key: string): Promise<TranscriptMarker | undefined>;
  register(key: string, value: TranscriptMarker): Promise<void>;
};

/** One message of OpenClaw's transcript (readRecentUserAssistantTextForSession). */
export type ConversationText = { role: "user" | "assistant"; text: string; timestamp?: number };

export type ReadConversation = (q: { agentId: string; sessionKey: string; minTimestampMs: number; limit: number }) => Promise<ConversationText[]>;

// The dispatcher's bounds on gatewayTranscript: 256 messages, 512 KiB of text.
export const MAX_MESSAGES = 256;
export const MAX_TEXT_BYTES = 512 * 1024;

export function digest(role: string, text: string): string {
  return createHash("sha256").update(`${role}\n${text}`).digest("hex").slice(0, 32);
}

/**
 * The gateway's messages after the marker: the transcript's user and
 * assistant texts in the window, without the dispatcher's own turns and
 * without the attempt's own prompt when OpenClaw already wrote it, the
 * newest ones within the dispatcher's bounds. Undefined when there is none.
 */
export function gatewayTranscript(marker: TranscriptMarker, recent: readonly ConversationText[], prompt: string): GatewayTranscript | undefined {
  const own = new Map<string, number>();
  for (const d of marker.ownDigests) own.set(d, (own.get(d) ?? 0) + 1);
  const kept: GatewayTranscript["messages"] = [];
  for (const m of recent) {
    if ((m.timestamp ?? 0) < marker.sinceMs || m.text === "") continue;
    const d = digest(m.role, m.text);
    const left = own.get(d) ?? 0;
    if (left > 0) {
      own.set(d, left - 1);
      continue;
    }
    kept.push({ role: m.role, text: m.text });
  }
  const last = kept.at(-1);
  if (last?.role === "user" && last.text === prompt) kept.pop();
  const bounded = newestWithin(kept);
  return bounded.length === 0 ? undefined : { afterRunId: marker.afterRunId, messages: bounded };
}

function newestWithin(messages: GatewayTranscript["messages"]): GatewayTranscript["messages"] {
  let bytes = 0;
  let start = messages.length;
  while (start > 0 && messages.length - start < MAX_MESSAGES) {
    const size = Buffer.byteLength(messages[start - 1]?.text ?? "");
    if (bytes + size > MAX_TEXT_BYTES) break;
    bytes += size;
    start--;
  }
  return messages.slice(start);
}

/** What the journaled turn leaves for the next one. */
export function nextMarker(
  prev: TranscriptMarker | undefined,
  turn: { runId: string; startedAtMs: number; texts: Array<{ role: "user" | "assistant"; text: string }>; sentMessages: boolean; reseeded: boolean },
): TranscriptMarker {
  const digests = turn.texts.map((t) => digest(t.role, t.text));
  if (prev !== undefined && turn.sentMessages && !turn.reseeded) {
    return { afterRunId: turn.runId, sinceMs: prev.sinceMs, ownDigests: [...prev.ownDigests, ...digests] };
  }
  return { afterRunId: turn.runId, sinceMs: turn.startedAtMs, ownDigests: digests };
}

/** A marker store for one process: for tests and a host without plugin state. */
export function memoryMarkers(): MarkerStore {
  const m = new Map<string, TranscriptMarker>();
  return {
    lookup: async (key) => m.get(key),
    register: async (key, value) => void m.set(key, value),
  };
}
