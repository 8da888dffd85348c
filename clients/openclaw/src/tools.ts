// OpenClaw's tools for a turn on the cluster: the attempt's host capability
// builds and binds them (createToolSurface: OpenClaw's policy pipeline,
// before-tool-call hooks, approvals and the caller's identity are bound by
// the host), the turn offers their names, descriptions and JSON schemas as
// host tools, and each `tool_call` of the stream runs the bound tool and
// becomes the body of …/tool-results.
import {
  type AgentHarnessAttemptParamsV2,
  type AnyAgentTool,
  applyEmbeddedAttemptToolsAllow,
  extractToolResultMediaArtifact,
  filterToolResultMediaUrls,
  isToolResultError,
} from "openclaw/plugin-sdk/agent-harness-runtime";

import { type HostToolMiddleware, hostToolMiddleware } from "./tool-result-middleware.js";
import type { HostTool } from "./turn-request.js";
import type { ToolCall, ToolResultRequest } from "./wire-shapes.js";

type SurfaceOptions = Parameters<NonNullable<AgentHarnessAttemptParamsV2["hostCapabilities"]["createToolSurface"]>>[0];

// The tool factory's options that are the attempt's own prepared values
// under the same name (the run, session, channel and requester facts the
// tools act for): each is passed as the attempt carries it.
const SAME_NAMED = [
  "toolBindings", "trigger", "memoryFlushWritePath", "messageTo", "messageThreadId", "conversationToolPolicy",
  "memberRoleIds", "currentMessagingTarget", "hasRepliedRef", "disableMessageTool", "swarmCollector",
  "swarmOutputSchema", "forceMessageTool", "enableHeartbeatTool", "forceHeartbeatTool",
  "allowGatewaySubagentBinding", "requireWorkspaceOnly", "trustedInternalHandoff",
  "cronCreatorAuthorityUnavailableReason", "conversationRecall", "bootstrapUserProfileId", "clientCaps",
  "gatewayUiCommandTarget", "pinnedWidgetAuthoring", "agentAccountId", "messageActionTurnCapability",
  "senderIsOwner", "currentChannelId", "currentThreadTs", "currentMessageId", "currentInboundAudio", "replyToMode",
  "sourceReplyDeliveryMode", "taskSuggestionDeliveryMode", "requireExplicitMessageTarget", "messageChannel",
  "messageProvider", "chatType", "channelContext", "senderId", "senderName", "senderUsername", "senderE164",
  "groupId", "groupChannel", "groupSpace", "spawnedBy", "approvalReviewerDeviceId", "modelHasVision", "workspaceDir",
  "agentDir", "cwd", "config", "inputProvenance", "skillsSnapshot", "sessionId", "sessionKey", "agentId", "runId",
  "jobId", "scheduledToolPolicy", "abortSignal", "oneShotCliRun", "githubPublicationAvailable", "sandbox",
  "preparedModelRuntime", "modelId", "delegationCapability", "onToolOutcome", "isTurnTainted",
  "allocateToolOutcomeOrdinal",
] as const satisfies ReadonlyArray<keyof AgentHarnessAttemptParamsV2 & keyof NonNullable<SurfaceOptions>>;

export type ToolSurfaceInput = Pick<
  AgentHarnessAttemptParamsV2,
  (typeof SAME_NAMED)[number] | "hostCapabilities" | "disableTools" | "toolsAllow" | "provider" | "model" | "thinkLevel" | "authProfileStore" | "toolAuthProfileStore"
>;

// The native runtime has its own workspace and shell on the cluster: OpenClaw's
// file and shell tools would act on the gateway's machine instead, beside
// native tools of the same names (exec, apply_patch). They are not built;
// OpenClaw's own, channel and plugin tools are.
const CONSTRUCTION: NonNullable<NonNullable<SurfaceOptions>["toolConstructionPlan"]> = {
  includeBaseCodingTools: false,
  includeShellTools: false,
  includeChannelTools: true,
  includeOpenClawTools: true,
  includePluginTools: true,
};

/** The tools OpenClaw offers this attempt, built and bound by the host; none when tools are disabled. */
export function toolSurface(p: ToolSurfaceInput): AnyAgentTool[] {
  const create = p.hostCapabilities.createToolSurface;
  if (p.disableTools === true || typeof create !== "function") return [];
  // toolsAllow narrows what the host built, as in OpenClaw's own runner;
  // the dispatcher applies it again to the native tools.
  return applyEmbeddedAttemptToolsAllow(create(surfaceOptions(p)), p.toolsAllow);
}

function surfaceOptions(p: ToolSurfaceInput): NonNullable<SurfaceOptions> {
  const o: NonNullable<SurfaceOptions> = {
    modelProvider: p.provider,
    requesterThinkingLevel: p.thinkLevel,
    toolConstructionPlan: CONSTRUCTION,
  };
  if (p.model?.api !== undefined) o.modelApi = p.model.api;
  if (p.model?.baseUrl !== undefined) o.modelBaseUrl = p.model.baseUrl;
  // The full store decides which tools are available; authProfileStore may
  // be scoped to the model's transport credentials.
  const store = p.toolAuthProfileStore ?? p.authProfileStore;
  if (store !== undefined) o.authProfileStore = store;
  for (const key of SAME_NAMED) {
    if (p[key] !== undefined) (o as Record<string, unknown>)[key] = p[key];
  }
  return o;
}

/** The turn's `tools[]`: each tool's name, description and JSON-schema parameters. */
export function hostTools(tools: readonly AnyAgentTool[]): HostTool[] {
  return tools.map((t) => {
    const out: HostTool = { name: t.name };
    if (t.description !== "") out.description = t.description;
    // A TypeBox schema is a JSON schema; its symbol-keyed markers do not serialize.
    if (t.parameters !== undefined) out.parameters = t.parameters;
    return out;
  });
}

/**
 * Runs one `tool_call` through the bound tool of that name and returns the
 * tool-results body. A tool that throws (OpenClaw's tools throw on failure),
 * or a name the attempt did not offer, is an error result the model is told.
 * What the tool returned, or the error it threw, goes through the attempt's
 * tool-result middleware (tool-result-middleware.ts) before the model is
 * told it; a middleware that fails withholds the output.
 */
export async function runHostTool(
  tools: readonly AnyAgentTool[],
  call: ToolCall,
  signal?: AbortSignal,
  middleware: HostToolMiddleware = hostToolMiddleware({}),
): Promise<ToolResultRequest> {
  const callId = call.callId ?? "";
  const tool = tools.find((t) => t.name === call.tool);
  if (tool === undefined) {
    return { callId, isError: true, errorMessage: `harness-operator: ${call.tool ?? "the tool"} is not a tool of this OpenClaw attempt` };
  }
  const args = call.arguments ?? {};
  let raw: ToolOutput;
  let thrown: string | undefined;
  try {
    raw = await tool.execute(callId, args, signal);
  } catch (err) {
    thrown = err instanceof Error ? err.message : String(err);
    // As OpenClaw's own runner makes a thrown error the tool's result.
    raw = { content: [{ type: "text", text: thrown }], details: {} };
  }
  let result: ToolOutput;
  try {
    result = await middleware.apply({
      toolCallId: callId,
      toolName: tool.name,
      args: isRecord(args) ? args : {},
      isError: thrown !== undefined || isToolResultError(raw),
      result: raw,
    });
  } catch (err) {
    return {
      callId, isError: true,
      errorMessage: `harness-operator: OpenClaw's tool-result middleware failed on ${tool.name}'s result, which is withheld: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (thrown !== undefined) return { callId, isError: true, errorMessage: textOf(result.content) };
  const body = toolResultOf(callId, result.content);
  // Media the tool made for the channel (an image it saved, a file it
  // attached) travel as OpenClaw's own runtime reads them, and come back
  // in the result's toolMediaUrls for OpenClaw to deliver (OpenClaw's SDK
  // contract: tool results go through the harness result, never sent by
  // the harness). They are what the tool delivered, read from its own
  // result before the middleware, as the SDK asks of delivery facts: the
  // middleware shapes what the model reads, not what was delivered.
  const media = filterToolResultMediaUrls(call.tool, extractToolResultMediaArtifact(raw)?.mediaUrls ?? [], raw);
  if (media.length > 0) body.mediaUrls = media;
  return body;
}

type ToolOutput = Awaited<ReturnType<AnyAgentTool["execute"]>>;

type Content = ToolOutput["content"];

function toolResultOf(callId: string, content: Content): ToolResultRequest {
  const out: NonNullable<ToolResultRequest["content"]> = [];
  for (const c of content) {
    if (c.type === "text") out.push({ type: "text", text: c.text });
    else if (c.type === "image") out.push({ type: "image", imageUrl: `data:${c.mimeType};base64,${c.data}` });
  }
  return out.length > 0 ? { callId, content: out } : { callId };
}

function textOf(content: Content): string {
  return content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("\n");
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
