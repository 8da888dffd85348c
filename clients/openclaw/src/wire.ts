// The dispatcher's turn stream payloads this plugin reads (internal/contract/wire,
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

/** The payload of an `approval_request` event (wire.ApprovalRequest). */
export type ApprovalRequest = {
  requestId?: string;
  kind?: "command" | "file_change" | "permissions" | "mcp_elicitation";
  callId?: string;
  tool?: string;
  command?: string;
  cwd?: string;
  changedPaths?: string[];
  reason?: string;
  decisions?: ApprovalDecision[];
  expiresAt?: string;
};

export type ApprovalDecision = "approve_once" | "approve_for_turn" | "deny";

/** The body of POST …/turns/{runId}/approvals (wire.ApprovalAnswer). */
export type ApprovalAnswer = { requestId: string; decision: ApprovalDecision };

/** The payload of a `user_input_request` event (wire.UserInputRequest). */
export type UserInputRequest = {
  requestId?: string;
  callId?: string;
  questions?: UserInputQuestion[];
  expiresAt?: string;
};

export type UserInputQuestion = {
  id: string;
  header?: string;
  question?: string;
  options?: Array<{ label: string; description?: string }>;
  allowOther?: boolean;
  secret?: boolean;
};

/** The body of POST …/turns/{runId}/user-input (wire.UserInputAnswer). */
export type UserInputAnswer = { requestId: string; answers: Record<string, { choices?: string[]; text?: string }> };

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
  /** The attested artifact of the cluster's server, when the turn asked for it (captureRuntimeArtifact). */
  runtimeArtifact?: { id?: string; fingerprint?: string };
};

/** The payload of a `transcript` event (wire.TranscriptRecord): one record of the turn's transcript mirror. */
export type TranscriptRecord = {
  type?: "message" | "tool_call" | "tool_result";
  role?: "user" | "assistant" | "tool";
  text?: string;
  callId?: string;
  tool?: string;
  arguments?: unknown;
  isError?: boolean;
  native?: boolean;
  /** A message of the turn's gatewayTranscript: already in OpenClaw's own transcript. */
  gateway?: boolean;
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
