// Isolated completion (the harness's runIsolatedCompletionV2): one fresh
// prompt-only model call with an empty tool surface, which OpenClaw's
// api.runtime.llm.complete({execution: {mode: "isolated-agent-runtime"}})
// routes to the harness of the model. The plugin posts it to the
// dispatcher's POST …/completions, which runs it on the selected cluster
// harness on an ephemeral thread with no tools, approvals, user input, hooks
// or native thread state, and refuses a model whose isolation it cannot
// prove (docs/dispatcher-api.md).
//
// The dispatcher's endpoint belongs to an AgentSession, and OpenClaw's call
// has none: the plugin keeps one AgentSession per agent and model for these
// calls (isolatedSession), created like any session the plugin creates. The
// call touches none of its state; the session only carries the agent and
// model that selection and RBAC decide on.
//
// Authorization (the harness SDK's owner): only a harness-owned call runs. Its
// model request uses the cluster harness's own login, or the one auth
// profile OpenClaw's plan forwards (its key read from the call's scoped
// store and sent inline, as a turn sends it: auth-profile.ts). A
// host-authorized call ("host": OpenClaw resolved a credential that must be
// used without substitution, for a route the cluster's harness does not
// own) fails closed before any request, naming why.
import { createHash } from "node:crypto";

import { AgentHarnessPreflightError, type AgentHarnessV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import { type PlanAuthInput, planAuthProfile, type ResolveKey } from "./auth-profile.js";
import type { DispatcherClient } from "./client.js";
import { completionAnswer, completionFailure } from "./completion-answer.js";
import { routeFacts, type RouteInput, type SupportOnlyFacts } from "./route-facts.js";
import { sessionName } from "./session-name.js";
import { type SessionIdentity, sessionModel, type SessionStore } from "./sessions.js";
import type * as wire from "./wire.js";

export type IsolatedParams = Parameters<NonNullable<AgentHarnessV2["runIsolatedCompletionV2"]>>[0];
export type IsolatedResult = Awaited<ReturnType<NonNullable<AgentHarnessV2["runIsolatedCompletionV2"]>>>;
type Authorization = IsolatedParams["authorization"];
type HarnessAuthorization = Extract<Authorization, { owner: "harness" }>;

const OPERATION = "isolated completion";

// The dispatcher's bound on timeoutMs (24 h; 400 beyond).
const MAX_TIMEOUT_MS = 86_400_000;

// The transport api the answer names when OpenClaw prepared no concrete
// route: the cluster's harness chose it.
const HARNESS_API = "harness-operator";

/**
 * The AgentSession identity of an agent's isolated completions on one
 * model: sessionId and sessionKey say what it is, the sessionId carries a
 * digest (agent ids and model ids hold characters a sessionId may not).
 */
export function isolatedSession(agentId: string, provider: string, modelId: string): SessionIdentity {
  const model = sessionModel(provider, modelId);
  const digest = createHash("sha256").update(`${agentId}\n${model}`, "utf8").digest("hex").slice(0, 24);
  return {
    agentId,
    sessionKey: `agent:${agentId}:harness-operator:isolated-completion:${model}`,
    sessionId: `harness-operator-isolated-completion.${digest}`,
  };
}

function refuse(reason: string, userMessage: string): never {
  throw new AgentHarnessPreflightError(`harness-operator ${OPERATION} refused: ${reason}`, { userMessage });
}

/** The harness-owned authorization the cluster can honour, or the refusal. */
export function clusterAuthorization(a: Authorization): HarnessAuthorization {
  if (a.owner === "host") {
    refuse(
      "OpenClaw resolved the credential (owner host), which must be used without substitution, and the cluster's harness authenticates with its own",
      "The cluster's agent harness cannot use the credential OpenClaw resolved for this completion.",
    );
  }
  if (a.owner !== "harness") refuse(`unknown authorization owner ${JSON.stringify((a as { owner: unknown }).owner)}`, "The completion's authorization is not one the cluster's agent harness knows.");
  return a;
}

/** The POST …/completions body of an isolated completion. */
export function isolatedRequest(p: IsolatedParams, auth: HarnessAuthorization, told?: SupportOnlyFacts): wire.CompletionRequest {
  const id = isolatedSession(p.agentId, p.provider, p.modelId);
  const body: wire.CompletionRequest = {
    sessionId: id.sessionId,
    sessionKey: id.sessionKey,
    agentId: p.agentId,
    provider: p.provider,
    modelId: p.modelId,
    prompt: p.prompt,
  };
  // The prepared route's facts, as a turn sends them: routeFacts reads only
  // the plan (runtimePlan.auth) and the model's transport, which a
  // harness-owned call does not carry.
  const route = routeFacts({ provider: p.provider, modelId: p.modelId, runtimePlan: { auth: auth.plan } } as unknown as RouteInput, told);
  if (route !== undefined) body.modelProvider = route;
  // The caller's system prompt replaces the runtime's own (required on Codex).
  if (p.systemPrompt !== "") body.instructions = p.systemPrompt;
  if (p.thinkLevel !== undefined) body.thinkLevel = p.thinkLevel;
  if (Number.isFinite(p.timeoutMs) && p.timeoutMs > 0) body.timeoutMs = Math.min(Math.floor(p.timeoutMs), MAX_TIMEOUT_MS);
  return body;
}

export type IsolatedDeps = { client: DispatcherClient; sessions: SessionStore; supportFacts?: SupportOnlyFacts; nowMs?: () => number; resolveKey?: ResolveKey };

export async function runIsolatedCompletion(p: IsolatedParams, deps: IsolatedDeps): Promise<IsolatedResult> {
  const auth = clusterAuthorization(p.authorization);
  const body = isolatedRequest(p, auth, deps.supportFacts);
  const id = isolatedSession(p.agentId, p.provider, p.modelId);
  const current = (): void => {
    p.assertCurrent?.();
    p.abortSignal?.throwIfAborted();
  };
  current();
  // The profile the plan forwards, with its key from the call's scoped
  // store; a profile that cannot be resolved fails closed, naming it.
  const planInput: PlanAuthInput = { plan: auth.plan, authProfileStore: auth.authProfileStore, agentDir: p.agentDir, config: p.config };
  if (p.abortSignal !== undefined) planInput.abortSignal = p.abortSignal;
  const profile = await planAuthProfile(planInput, OPERATION, "The cluster's agent harness cannot use the selected auth profile for this completion.", deps.resolveKey);
  if (profile !== undefined) body.authProfile = profile;
  let session: string;
  try {
    // Never locked: the session exists only for these calls, one per model.
    session = await deps.sessions.ensure(id, { model: sessionModel(p.provider, p.modelId), locked: false });
  } catch (err) {
    throw new AgentHarnessPreflightError(`harness-operator ${OPERATION}: could not create or find AgentSession ${sessionName(id.sessionId)}: ${(err as Error).message}`, {
      userMessage: "The cluster session for isolated completions could not be prepared.",
      cause: err,
    });
  }
  current();
  let response: unknown;
  try {
    response = await deps.client.complete(session, body, p.abortSignal);
  } catch (err) {
    throw completionFailure(OPERATION, err);
  }
  const route = { api: auth.plan.modelRoute?.api ?? HARNESS_API, provider: p.provider, model: p.modelId };
  return { assistant: completionAnswer(OPERATION, response, route, ["stop", "length"], (deps.nowMs ?? Date.now)()).assistant };
}
