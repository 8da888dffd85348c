// OpenClaw publishes its session-transcript-runtime without types: what the
// transcript mirror (transcript-mirror.ts) calls of it, as OpenClaw's plugin
// SDK documents it (its "Agent runtime" page). The mirror's
// AppendTranscriptMessage is this function's type.
declare module "openclaw/plugin-sdk/session-transcript-runtime" {
  export function appendSessionTranscriptMessageByIdentityStrict(params: {
    agentId?: string;
    sessionKey?: string;
    sessionId: string;
    message: import("openclaw/plugin-sdk/agent-harness-runtime").AgentMessage;
    runId?: string;
    idempotencyLookup: "scan";
    updateMode: "inline";
    config?: unknown;
  }): Promise<
    | { kind: "result"; result?: { appended?: boolean; messageId?: string } }
    | { kind: "suppressed" }
    | { kind: "rejected"; reason: string }
  >;
}
