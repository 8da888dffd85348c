// The agent harness this plugin registers: supports() from the in-memory
// registry, runAttempt() through the dispatcher.
import type { AgentHarnessAttemptParamsV2, AgentHarnessAttemptResult, AgentHarnessV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import { attemptResult } from "./attempt-result.js";
import { DispatcherClient, type TurnStream } from "./client.js";
import { ClusterRegistry } from "./cluster-registry.js";
import type { PluginConfig } from "./config.js";
import { DispatcherError } from "./dispatcher-error.js";
import { preflightError } from "./errors.js";
import { TurnProjection } from "./events.js";
import { KubeClient } from "./kube.js";
import { SupportRegistry } from "./registry.js";
import { ensureSession, type Logger, sessionHooks } from "./session-hooks.js";
import { sessionName } from "./session-name.js";
import { SessionStore } from "./sessions.js";
import { turnRequest } from "./turn-request.js";
import type { ToolCall, ToolResultRequest } from "./wire.js";

/** The one harness id this plugin registers (and returns as agentHarnessId). */
export const HARNESS_ID = "harness-operator";

// Reconnects of one turn's stream after it dropped without the turn's end
// (the dispatcher replays from Last-Event-ID; it never runs a turn twice).
const MAX_RECONNECTS = 3;

/** Answers a host tool call of the turn. */
export type ToolRunner = (call: ToolCall, params: AgentHarnessAttemptParamsV2) => Promise<ToolResultRequest>;

// The plugin offers the cluster no host tools yet, so a call can only come
// from a thread another gateway started with tools: it is answered as failed
// at once rather than left to the dispatcher's tool timeout.
const refuseTools: ToolRunner = async (call) => ({
  callId: call.callId ?? "",
  isError: true,
  errorMessage: `harness-operator: OpenClaw's tools are not offered through the cluster yet; ${call.tool ?? "the tool"} did not run`,
});

export function createHarness(
  config: PluginConfig,
  deps: { registry?: SupportRegistry; client?: DispatcherClient; runTool?: ToolRunner; logger?: Logger } = {},
): AgentHarnessV2 {
  const log = deps.logger ?? { warn: () => undefined };
  // Without Kubernetes settings (outside a cluster, not configured) the
  // session must exist and supports() answers from `routes` alone.
  let sessions: SessionStore | undefined;
  let cluster: ClusterRegistry | undefined;
  if (config.kubernetes !== undefined) {
    const kube = new KubeClient(config.kubernetes);
    sessions = new SessionStore(kube, config.namespace);
    cluster = clusterRegistry(kube, config.namespace, config.kubernetes.refreshSeconds * 1000, log);
  }
  const registry = deps.registry ?? new SupportRegistry(config.routes, cluster);
  const client = deps.client ?? new DispatcherClient(config);
  const runTool = deps.runTool ?? refuseTools;
  const harness: AgentHarnessV2 = {
    id: HARNESS_ID,
    label: "Kubernetes agent harnesses (harness-operator)",
    supports: (ctx) => registry.supports(ctx),
    runAttempt: async (params) => {
      if (sessions !== undefined) await ensureSession(sessions, params);
      return runAttempt(params, client, runTool);
    },
    dispose: () => cluster?.stop(),
  };
  return sessions === undefined ? harness : { ...harness, ...sessionHooks(sessions, log) };
}

// The registry starts reading the cluster at the first supports() question;
// a refresh failure is logged when it starts failing, not at every retry.
function clusterRegistry(kube: KubeClient, namespace: string, intervalMs: number, log: Logger): ClusterRegistry {
  let failing = false;
  return new ClusterRegistry(kube, namespace, intervalMs, {
    onRefresh: (err) => {
      if (err !== undefined && !failing) log.warn(`harness-operator: reading the cluster's harnesses and policies failed (supports() defers to the dispatcher until it succeeds): ${err.message}`);
      failing = err !== undefined;
    },
  });
}

async function runAttempt(
  params: AgentHarnessAttemptParamsV2,
  client: DispatcherClient,
  runTool: ToolRunner,
): Promise<AgentHarnessAttemptResult> {
  const session = sessionName(params.sessionId);
  const body = turnRequest(params);
  let stream: TurnStream;
  try {
    stream = await client.startTurn(session, body, params.abortSignal ? { signal: params.abortSignal } : {});
  } catch (err) {
    // Nothing was journaled: the turn was not claimed.
    throw preflightError(
      err instanceof DispatcherError
        ? err.wire
        : { code: "DispatcherUnreachable", message: (err as Error).message, scope: "", retryable: true },
    );
  }
  const projection = new TurnProjection(params);
  const onAbort = (): void => {
    const token = projection.selected?.turnToken;
    if (token !== undefined) client.interrupt(session, stream.runId || body.runId, token).catch(() => undefined);
  };
  params.abortSignal?.addEventListener("abort", onAbort, { once: true });
  try {
    for (let reconnects = 0; ; reconnects++) {
      try {
        for await (const ev of stream.events) {
          const call = await projection.apply(ev);
          if (call !== undefined) await answerTool(call, params, projection, client, session, stream.runId || body.runId, runTool);
          if (projection.end !== undefined) break;
        }
      } catch {
        // A dropped connection: reconnect below, as for a stream that ended early.
      }
      if (projection.end !== undefined || reconnects >= MAX_RECONNECTS || params.abortSignal?.aborted === true) break;
      const opts: { lastEventId?: string } = {};
      if (projection.lastEventId !== undefined) opts.lastEventId = projection.lastEventId;
      try {
        stream = await client.startTurn(session, body, opts);
      } catch {
        break;
      }
    }
  } finally {
    params.abortSignal?.removeEventListener("abort", onAbort);
  }
  return attemptResult(projection, {
    sessionId: params.sessionId,
    harnessId: HARNESS_ID,
    abortedByHost: params.abortSignal?.aborted === true,
  });
}

async function answerTool(
  call: ToolCall,
  params: AgentHarnessAttemptParamsV2,
  projection: TurnProjection,
  client: DispatcherClient,
  session: string,
  runId: string,
  runTool: ToolRunner,
): Promise<void> {
  const token = projection.selected?.turnToken;
  if (token === undefined || call.callId === undefined) return;
  let answer: ToolResultRequest;
  try {
    answer = await runTool(call, params);
  } catch (err) {
    answer = { callId: call.callId, isError: true, errorMessage: (err as Error).message };
  }
  // A call no longer waiting (NoPendingToolCall: it timed out, or the turn
  // ended) changes nothing here: the stream's tool_terminal is the outcome.
  await client.postToolResult(session, runId, token, answer).catch(() => undefined);
}
