// The agent harness this plugin registers: supports() from the in-memory
// registry, runAttempt() through the dispatcher, loadMcpToolCatalog() from
// the session's thread on the cluster.
import {
  type AgentHarnessAttemptParamsV2,
  type AgentHarnessAttemptResult,
  AgentHarnessPreflightError,
  type AgentHarnessV2,
} from "openclaw/plugin-sdk/agent-harness-runtime";

import { Attempt, type AttemptDeps } from "./attempt.js";
import { attemptResult } from "./attempt-result.js";
import { DispatcherClient, type TurnStream } from "./client.js";
import { ClusterRegistry } from "./cluster-registry.js";
import { DEFAULT_RETRY, type PluginConfig } from "./config.js";
import { sessionContextReset } from "./context-reset.js";
import { DispatcherError, outcomeUnknown, type WireError } from "./dispatcher-error.js";
import { preflightError } from "./errors.js";
import { assertExecPolicyHeld } from "./exec-policy.js";
import { TurnProjection } from "./events.js";
import { KubeClient } from "./kube.js";
import { loadMcpToolCatalog } from "./mcp-catalog.js";
import { forwardedMcpServers } from "./mcp-servers.js";
import { PendingAnswers } from "./pending-answers.js";
import { SupportRegistry } from "./registry.js";
import { runtimeArtifactCapability } from "./runtime-artifact.js";
import { runIsolatedCompletion } from "./isolated-completion.js";
import { ensureSession, type Logger, sessionHooks } from "./session-hooks.js";
import { sessionName } from "./session-name.js";
import { SessionStore } from "./sessions.js";
import { finalizeSettledTurn } from "./settled-finalization.js";
import { runSideQuestion } from "./side-question.js";
import { type RetryOptions, realWaiter, startWithRetries, type Waiter } from "./start-retry.js";
import { SupportFacts } from "./support-facts.js";
import { loggedSupports } from "./support-log.js";
import { SAFE_DENY_TOOLS } from "./tool-policy.js";
import { assertNoNativeMiddleware } from "./tool-result-middleware.js";
import { type MarkerStore, memoryMarkers } from "./transcript-marker.js";

/** The one harness id this plugin registers (and returns as agentHarnessId). */
export const HARNESS_ID = "harness-operator";

// Reconnects of one turn's stream after it dropped without the turn's end
// (the dispatcher replays from Last-Event-ID; it never runs a turn twice).
const MAX_RECONNECTS = 3;

export function createHarness(
  config: PluginConfig,
  deps: { registry?: SupportRegistry; client?: DispatcherClient; logger?: Logger; waiter?: Waiter } & AttemptDeps = {},
): AgentHarnessV2 {
  const log = deps.logger ?? { warn: () => undefined };
  // Without Kubernetes settings (outside a cluster, not configured) the
  // session must exist and supports() answers from `routes` alone.
  let sessions: SessionStore | undefined;
  let cluster: ClusterRegistry | undefined;
  let kube: KubeClient | undefined;
  if (config.kubernetes !== undefined) {
    kube = new KubeClient(config.kubernetes);
    sessions = new SessionStore(kube, config.namespace);
    cluster = clusterRegistry(kube, config.namespace, config.kubernetes.refreshSeconds * 1000, log);
  }
  const registry = deps.registry ?? new SupportRegistry(config.routes, cluster);
  const client = deps.client ?? new DispatcherClient(config);
  const supportFacts = new SupportFacts();
  const attemptDeps = { ...deps, markers: deps.markers ?? memoryMarkers(), supportFacts };
  const retry = { bounds: config.retry ?? DEFAULT_RETRY, waiter: deps.waiter ?? realWaiter };
  const harness: AgentHarnessV2 = {
    id: HARNESS_ID,
    label: "Kubernetes agent harnesses (harness-operator)",
    // The dispatcher enforces an explicit tool policy per turn on the
    // cluster's harness, or refuses the turn with ToolPolicyUnenforceable
    // (scope harness) when that harness cannot: never a relaxed policy.
    conversationToolPolicySupport: "exact",
    conversationToolPolicySafeDenyTools: SAFE_DENY_TOOLS,
    // The cluster's harnesses log in with their own credentials
    // (AgentHarness spec.authBootstrap: Harness, the only value the
    // operator admits for Codex): OpenClaw needs no provider key first.
    authBootstrap: "harness",
    supports: loggedSupports((ctx) => {
      supportFacts.remember(ctx);
      return registry.supports(ctx);
    }, log),
    runAttempt: async (params) => {
      assertExecPolicyHeld(params);
      assertMcpServersForwardable(params);
      // Codex hands native tools' output to the model directly: a tool-result
      // middleware that covers one refuses the attempt before anything is
      // written (tool-result-middleware.ts).
      assertNoNativeMiddleware();
      if (sessions !== undefined) await ensureSession(sessions, params);
      return runAttempt(params, client, attemptDeps, retry);
    },
    dispose: () => cluster?.stop(),
    finalizeSettledTurn: (params) => finalizeSettledTurn(params, { client, supportFacts }),
    loadMcpToolCatalog: (params) => loadMcpToolCatalog(params, { client }),
    runSideQuestion: (params) => runSideQuestion(params, { client, supportFacts, logger: log }),
  };
  if (sessions === undefined || kube === undefined) return harness;
  return {
    ...harness,
    ...sessionHooks(sessions, log),
    ...sessionContextReset(sessions, attemptDeps.markers, log),
    runtimeArtifact: runtimeArtifactCapability(kube),
    // Needs an AgentSession of its own, which only the Kubernetes settings can create.
    runIsolatedCompletionV2: (params) => runIsolatedCompletion(params, { client, sessions, supportFacts }),
  };
}

// A configured MCP server the turn cannot carry refuses the attempt before
// anything is created or sent, with OpenClaw's own error and no scope: the
// gateway's config asks for the server, and neither the cluster without it
// nor another runtime is what it asked for.
function assertMcpServersForwardable(params: AgentHarnessAttemptParamsV2): void {
  const mcp = forwardedMcpServers(params);
  if ("refused" in mcp) {
    throw new AgentHarnessPreflightError(mcp.refused, { userMessage: `The configured MCP server "${mcp.server}" cannot be offered on the cluster's agent harness.` });
  }
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
  deps: AttemptDeps & { markers: MarkerStore; supportFacts: SupportFacts },
  retry: Omit<RetryOptions, "signal" | "timeoutMs">,
): Promise<AgentHarnessAttemptResult> {
  const session = sessionName(params.sessionId);
  const attempt = await Attempt.prepare(params, deps);
  const started = await startTurn(attempt, params, client, session, retry);
  let stream = started.stream;
  // Why the dispatcher's answer is missing, while the turn may have run.
  let lost = started.lost;
  const body = attempt.body;
  const projection = new TurnProjection(params);
  const onAbort = (): void => {
    const token = projection.selected?.turnToken;
    if (token !== undefined) client.interrupt(session, stream.runId || body.runId, token).catch(() => undefined);
  };
  params.abortSignal?.addEventListener("abort", onAbort, { once: true });
  const answers = new PendingAnswers(params.abortSignal, (err) => {
    deps.logger?.warn(`harness-operator: answering a request of run ${stream.runId || body.runId} failed; the dispatcher times it out: ${(err as Error).message}`);
  });
  try {
    for (let reconnects = 0; ; reconnects++) {
      try {
        for await (const ev of stream.events) {
          const action = await projection.apply(ev);
          if (action !== undefined) {
            const token = projection.selected?.turnToken;
            const to = { client, session, runId: stream.runId || body.runId };
            answers.add((signal) => attempt.answer(action, token, to, signal));
          }
          if (projection.end !== undefined) break;
        }
      } catch {
        // A dropped connection: reconnect below, as for a stream that ended early.
      }
      if (projection.end !== undefined || reconnects >= MAX_RECONNECTS || params.abortSignal?.aborted === true) break;
      const opts: { lastEventId?: string } = {};
      if (projection.lastEventId !== undefined) opts.lastEventId = projection.lastEventId;
      try {
        // A resumption the dispatcher refuses for now (503 AuthUnavailable,
        // 429 RateLimited) is waited out like a start; it replays, never re-runs.
        stream = await startWithRetries(() => client.startTurn(session, body, opts), { ...retry, signal: params.abortSignal, timeoutMs: params.timeoutMs });
        lost = undefined;
      } catch (err) {
        // Lost again: another reconnect. Refused: the turn ends here.
        if (!outcomeUnknown(err)) break;
        lost = err as Error;
        stream = unanswered(stream.runId);
      }
    }
  } finally {
    params.abortSignal?.removeEventListener("abort", onAbort);
    await answers.close();
  }
  if (projection.end === undefined && lost !== undefined && params.abortSignal?.aborted !== true) {
    projection.end = { kind: "error", error: lostAnswer(lost) };
  }
  const result = attemptResult(projection, {
    params,
    harnessId: HARNESS_ID,
    abortedByHost: params.abortSignal?.aborted === true,
  });
  await attempt.finish(projection, result, stream.runId || body.runId);
  return result;
}

// The turn's stream once the dispatcher claimed it, after the refusals
// start-retry.ts waits out; a refusal that stands is OpenClaw's preflight
// error. A post whose outcome is unknown (no answer once the connection was
// open, a proxy's 5xx) may have started the turn: it is treated as claimed,
// never as a preflight error, which would let OpenClaw's fallback run the
// turn a second time elsewhere. Its stream is empty, so the caller posts the
// same body again: the dispatcher replays the run if it journaled it, and
// runs it once if not.
async function startTurn(
  attempt: Attempt,
  params: AgentHarnessAttemptParamsV2,
  client: DispatcherClient,
  session: string,
  retry: Omit<RetryOptions, "signal" | "timeoutMs">,
): Promise<{ stream: TurnStream; lost?: Error }> {
  const startOpts = params.abortSignal ? { signal: params.abortSignal } : {};
  const retryOpts = { ...retry, signal: params.abortSignal, timeoutMs: params.timeoutMs };
  try {
    return { stream: await attempt.start((body) => startWithRetries(() => client.startTurn(session, body, startOpts), retryOpts)) };
  } catch (err) {
    if (outcomeUnknown(err)) return { stream: unanswered(""), lost: err as Error };
    // A definitive refusal: nothing was journaled, the turn was not claimed.
    throw preflightError(
      err instanceof DispatcherError
        ? err.wire
        : { code: "DispatcherUnreachable", message: (err as Error).message, scope: "", retryable: true },
    );
  }
}

// A post that got no stream: nothing to read, so the caller reconnects.
function unanswered(runId: string): TurnStream {
  return { runId, events: (async function* () {})() };
}

// The claimed failure of a turn whose answer never came: it may have run.
function lostAnswer(err: Error): WireError {
  return {
    code: "DispatcherUnreachable",
    message: `the dispatcher's answer to the turn was lost, so it may have run: ${err.message}`,
    scope: "",
    retryable: false,
    replaySafe: false,
  };
}
