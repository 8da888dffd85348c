// The body of POST …/turns (wire.TurnRequest) for a prepared attempt. The
// session's identity is repeated (the AgentSession is authoritative and
// refuses a contradiction); OpenClaw's own harness pin and runtime override
// are never sent: the cluster's session and policy decide which native
// harness runs, and the pin OpenClaw holds names this plugin, not a harness
// of the cluster.
import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

export type AttemptInput = Pick<
  AgentHarnessAttemptParamsV2,
  "runId" | "sessionId" | "sessionKey" | "agentId" | "provider" | "modelId" | "prompt" | "images" | "thinkLevel" | "timeoutMs" | "trigger"
>;

export type TurnRequest = {
  runId: string;
  sessionId: string;
  sessionKey?: string;
  agentId?: string;
  provider: string;
  modelId: string;
  prompt: string;
  images?: Array<{ url: string }>;
  thinkLevel?: string;
  timeoutMs?: number;
  trigger?: string;
};

// The dispatcher's bounds: timeoutMs 0 – 24 h (400 beyond), trigger ≤ 64 bytes.
const MAX_TIMEOUT_MS = 86_400_000;

export function turnRequest(p: AttemptInput): TurnRequest {
  const body: TurnRequest = {
    runId: p.runId,
    sessionId: p.sessionId,
    provider: p.provider,
    modelId: p.modelId,
    prompt: p.prompt,
  };
  if (p.sessionKey !== undefined) body.sessionKey = p.sessionKey;
  if (p.agentId !== undefined) body.agentId = p.agentId;
  // Sent as OpenClaw prepared it: a level the dispatcher does not know is its
  // 400 naming thinkLevel, not a silent change of what the user asked for.
  if (p.thinkLevel !== undefined) body.thinkLevel = p.thinkLevel;
  if (Number.isFinite(p.timeoutMs) && p.timeoutMs > 0) body.timeoutMs = Math.min(Math.floor(p.timeoutMs), MAX_TIMEOUT_MS);
  if (p.trigger !== undefined) body.trigger = p.trigger;
  if (p.images !== undefined && p.images.length > 0) {
    body.images = p.images.map((img) => ({ url: `data:${img.mimeType};base64,${img.data}` }));
  }
  return body;
}
