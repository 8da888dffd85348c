// The dispatcher's turn stream payloads this plugin reads (internal/wire,
// docs/dispatcher-api.md "Events"). Fields it does not use are left out;
// every field is optional on the wire (empty ones are omitted).
import type { WireError } from "./dispatcher-error.js";

export type Selected = {
  runId?: string;
  turnToken?: string;
  runtime?: string;
  harnessId?: string;
  reason?: string;
};

export type Partial = { itemId?: string; delta?: string };

export type AgentEvent = {
  stream?: string;
  phase?: string;
  itemId?: string;
  callId?: string;
  tool?: string;
  text?: string;
  status?: string;
  data?: unknown;
};

export type ToolCall = { callId?: string; tool?: string; arguments?: unknown };

export type ToolTerminal = {
  callId?: string;
  tool?: string;
  arguments?: unknown;
  executionStarted?: boolean;
  outcome?: "success" | "failure";
  failure?: { reason?: string; message?: string; exitCode?: number };
  native?: boolean;
  nativeMutation?: { mutatingAction?: boolean; replaySafe?: boolean };
};

export type NativeRequest = { requestId?: string; callId?: string; kind?: string; tool?: string; resolution?: string };

export type Terminal = { kind?: "ok" | "aborted" | "timeout" | "failed"; message?: string };

export type Usage = { input?: number; cachedInput?: number; output?: number; reasoning?: number; total?: number };

export type LastToolError = {
  callId?: string;
  tool?: string;
  executionStarted?: boolean;
  reason?: string;
  message?: string;
  mutatingAction?: boolean;
};

export type TurnResult = {
  runId?: string;
  assistantTexts?: string[];
  terminal?: Terminal;
  classification?: "empty" | "reasoning-only" | "planning-only";
  usage?: Usage;
  lastToolError?: LastToolError;
  toolMediaUrls?: string[];
  hostOwnedToolMediaUrls?: string[];
  agentHarnessId?: string;
};

export type StreamError = WireError;

/** The body of POST …/turns/{runId}/tool-results (wire.ToolResultRequest). */
export type ToolResultRequest = {
  callId: string;
  content?: Array<{ type: "text"; text: string } | { type: "image"; imageUrl: string }>;
  isError?: boolean;
  errorMessage?: string;
  mediaUrls?: string[];
};
