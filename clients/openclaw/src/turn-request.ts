// The body of POST …/turns (wire.TurnRequest) for a prepared attempt. The
// session's identity is repeated (the AgentSession is authoritative and
// refuses a contradiction); OpenClaw's own harness pin and runtime override
// are never sent: the cluster's session and policy decide which native
// harness runs, and the pin OpenClaw holds names this plugin, not a harness
// of the cluster. Everything else is OpenClaw's prepared decision, carried
// as prepared: the route facts (route-facts.ts), the tool policy and its
// host verdict, the host tools the attempt's tool surface built (tools.ts)
// and the gateway's own turns since the dispatcher's last one
// (transcript-marker.ts), the auth profile OpenClaw forwarded, with its
// key (auth-profile.ts), and the MCP servers its config names
// (mcp-servers.ts). The body's runId is derived from OpenClaw's
// (run-id.ts): OpenClaw re-uses its runId for every attempt of a run.
import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { InlineAuthProfile } from "./auth-profile.js";
import { collaborationModeFields } from "./collaboration-mode.js";
import { nativeApprovalMode } from "./exec-policy.js";
import { forwardedMcpServers } from "./mcp-servers.js";
import { passThroughFields } from "./pass-through.js";
import { routeFacts, type SupportOnlyFacts } from "./route-facts.js";
import { dispatcherRunId } from "./run-id.js";
import type * as wire from "./wire.js";

export type AttemptInput = Pick<
  AgentHarnessAttemptParamsV2,
  | "runId"
  | "sessionId"
  | "sessionKey"
  | "agentId"
  | "provider"
  | "modelId"
  | "model"
  | "runtimePlan"
  | "prompt"
  | "images"
  | "thinkLevel"
  | "timeoutMs"
  | "trigger"
  | "extraSystemPrompt"
  | "toolsAllow"
  | "disableTools"
  | "pluginHarnessToolPolicyRestricted"
  | "pluginHarnessToolPolicySafeDeniedTools"
  | "conversationToolPolicy"
  | "execOverrides"
  | "permissionMode"
  | "config"
  | "toolOverrides"
  | "captureRuntimeArtifact"
  | "expectedRuntimeArtifact"
  | "skillWorkshopProposalOnly"
>;

/** A host tool offered in the turn. */
export type HostTool = wire.HostTool;

/** The gateway's own turns since the dispatcher's last one: it always names where they start. */
export type GatewayTranscript = Required<wire.GatewayTranscript>;

/** What the plugin adds to the attempt: the tools it offers, the gateway's turns, the forwarded auth profile. */
export type TurnAdditions = {
  tools?: HostTool[];
  gatewayTranscript?: GatewayTranscript;
  supportFacts?: SupportOnlyFacts;
  authProfile?: InlineAuthProfile;
};

type ToolPolicyLayer = wire.ToolPolicyLayer;

/**
 * The part of wire.TurnRequest this plugin sends: the session's identity,
 * route and prompt always, images by URL, and only the approval modes it
 * chooses (approvalModeOf).
 */
export type TurnRequest = Pick<
  wire.TurnRequest,
  | "sessionKey"
  | "agentId"
  | "modelProvider"
  | "toolPolicy"
  | "toolsAllow"
  | "disableTools"
  | "pluginHarnessToolPolicyRestricted"
  | "tools"
  | "extraSystemPrompt"
  | "thinkLevel"
  | "timeoutMs"
  | "trigger"
  | "gatewayTranscript"
  | "captureRuntimeArtifact"
  | "expectedRuntimeArtifact"
  | "mcpServers"
  | "skillWorkshopProposalOnly"
  | "collaborationMode"
> &
  Required<Pick<wire.TurnRequest, "runId" | "sessionId" | "provider" | "modelId" | "prompt">> & {
    images?: Array<Required<Pick<wire.Image, "url">>>;
    approvalMode?: Extract<wire.ApprovalMode, "never" | "untrusted">;
    authProfile?: InlineAuthProfile;
  };

// The dispatcher's bounds: timeoutMs 0 – 24 h (400 beyond), trigger ≤ 64 bytes.
const MAX_TIMEOUT_MS = 86_400_000;

export function turnRequest(p: AttemptInput, add: TurnAdditions = {}): TurnRequest {
  const body: Omit<TurnRequest, "runId"> = {
    sessionId: p.sessionId,
    provider: p.provider,
    modelId: p.modelId,
    prompt: p.prompt,
  };
  if (p.sessionKey !== undefined) body.sessionKey = p.sessionKey;
  if (p.agentId !== undefined) body.agentId = p.agentId;
  const route = routeFacts(p, add.supportFacts);
  if (route !== undefined) body.modelProvider = route;
  Object.assign(body, toolPolicyFields(p));
  // Sent as OpenClaw prepared it: a level the dispatcher does not know is its
  // 400 naming thinkLevel, not a silent change of what the user asked for.
  if (p.thinkLevel !== undefined) body.thinkLevel = p.thinkLevel;
  if (Number.isFinite(p.timeoutMs) && p.timeoutMs > 0) body.timeoutMs = Math.min(Math.floor(p.timeoutMs), MAX_TIMEOUT_MS);
  if (p.trigger !== undefined) body.trigger = p.trigger;
  Object.assign(body, passThroughFields(p));
  if (p.images !== undefined && p.images.length > 0) {
    body.images = p.images.map((img) => ({ url: `data:${img.mimeType};base64,${img.data}` }));
  }
  if (p.extraSystemPrompt !== undefined && p.extraSystemPrompt !== "") body.extraSystemPrompt = p.extraSystemPrompt;
  if (add.tools !== undefined && add.tools.length > 0) body.tools = add.tools;
  body.approvalMode = approvalModeOf(p);
  Object.assign(body, collaborationModeFields(p));
  if (add.gatewayTranscript !== undefined) body.gatewayTranscript = add.gatewayTranscript;
  // A server the wire cannot carry was refused before the body is built
  // (harness.ts); here it fails closed all the same.
  const mcp = forwardedMcpServers(p);
  if ("refused" in mcp) throw new Error(mcp.refused);
  if (mcp.servers.length > 0) body.mcpServers = mcp.servers;
  // The harness SDK's verified runtime artifacts: the dispatcher attests the
  // cluster's server and refuses a turn whose server runs another artifact
  // (ArtifactMismatch) before any native thread starts. OpenClaw's binding
  // names no cluster harness, so none is required by name.
  if (p.captureRuntimeArtifact === true) body.captureRuntimeArtifact = true;
  if (p.expectedRuntimeArtifact !== undefined) {
    body.expectedRuntimeArtifact = { id: p.expectedRuntimeArtifact.id, fingerprint: p.expectedRuntimeArtifact.fingerprint };
  }
  // The key is no part of the runId (which the cluster shows in status,
  // events and logs): the digest covers the profile's id only, as the
  // dispatcher's own request digest does. A retry after the key rotated is
  // then the same run, whichever side compares.
  if (add.authProfile === undefined) return { runId: dispatcherRunId(p.runId, body), ...body };
  const runId = dispatcherRunId(p.runId, { ...body, authProfile: { id: add.authProfile.id, apiKey: "inline" } });
  return { runId, ...body, authProfile: { id: add.authProfile.id, apiKey: add.authProfile.apiKey } };
}

type ToolPolicyFields = Pick<TurnRequest, "toolPolicy" | "toolsAllow" | "disableTools" | "pluginHarnessToolPolicyRestricted">;

// The host's verdict (pluginHarnessToolPolicyRestricted) is authoritative and
// already covers every layer OpenClaw resolved; the conversation layer the
// attempt carries is sent too, so that the dispatcher's own rule and its
// explanations see it. OpenClaw's alsoAllow widens that layer's allowlist;
// the dispatcher's layers have none of their own, so it joins the allowlist
// when there is one and is the policy's alsoAllow when there is not.
// The denies OpenClaw left to the harness (pluginHarnessToolPolicySafeDeniedTools:
// every expanded deny of its layers — group, sender, agent, … — was in the
// registration's safe list) are a deny layer of their own: the dispatcher
// denies them on the selected harness, or refuses the turn when that harness
// does not declare them safe. Not sending them would run the tools.
function toolPolicyFields(p: AttemptInput): ToolPolicyFields {
  const out: ToolPolicyFields = {};
  // A copy: [] (deny every tool) differs from absent (no narrowing).
  if (p.toolsAllow !== undefined) out.toolsAllow = [...p.toolsAllow];
  if (p.disableTools === true) out.disableTools = true;
  if (p.pluginHarnessToolPolicyRestricted === true) out.pluginHarnessToolPolicyRestricted = true;
  const layers: ToolPolicyLayer[] = [];
  const policy: NonNullable<TurnRequest["toolPolicy"]> = {};
  const c = p.conversationToolPolicy;
  if (c !== undefined && (c.allow !== undefined || c.alsoAllow !== undefined || c.deny !== undefined)) {
    const layer: ToolPolicyLayer = { name: "conversation" };
    if (c.allow !== undefined) layer.allow = [...c.allow, ...(c.alsoAllow ?? [])];
    else if (c.alsoAllow !== undefined) policy.alsoAllow = [...c.alsoAllow];
    if (c.deny !== undefined) layer.deny = [...c.deny];
    layers.push(layer);
  }
  const safeDenied = p.pluginHarnessToolPolicySafeDeniedTools;
  if (safeDenied !== undefined && safeDenied.length > 0) layers.push({ name: SAFE_DENIED_LAYER, deny: [...safeDenied] });
  if (layers.length === 0) return out;
  out.toolPolicy = { ...policy, layers };
  return out;
}

/** The deny layer of the tools OpenClaw left to the harness to deny. */
export const SAFE_DENIED_LAYER = "openclaw-safe-denied";

// Native actions are asked for ("untrusted") so that each goes through the
// attempt's runBeforeToolCall, where OpenClaw's hooks and approvals decide
// (native-requests.ts); "never" only when the attempt itself says commands
// run unattended. An exec policy the cluster cannot hold was refused before
// the body is built (Attempt.prepare); here it fails closed all the same.
function approvalModeOf(p: AttemptInput): NonNullable<TurnRequest["approvalMode"]> {
  const mode = nativeApprovalMode(p);
  if ("refused" in mode) throw new Error(mode.refused);
  return mode.approvalMode;
}
