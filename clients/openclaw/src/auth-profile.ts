// The attempt's auth profile, forwarded to the cluster as the turn's
// `authProfile` in its inline form ({id, apiKey}). The contract: core
// "forwards a compatible, explicitly selected or ordered OpenClaw auth
// profile and its scoped store", and the harness "must resolve that profile
// ... before issuing model requests, keep secrets scoped to the attempt, and
// surface actionable authentication failures".
//
// The profile is the one OpenClaw's runtime plan forwards
// (runtimePlan.auth.forwardedAuthProfileId); the attempt's raw
// authProfileId may be a session selection detail and is not used. Its key
// is the attempt's resolvedApiKey when OpenClaw resolved it for that
// profile, else it is read from the attempt's scoped store with OpenClaw's
// own resolver (which follows key and token references). The key goes only
// into the turn's body, sent over TLS; it is never logged, and it is no part
// of the dispatcher's runId (turn-request.ts). A selected profile whose key
// cannot be resolved fails the attempt, naming the profile: running on the
// harness's own credentials instead would silently change whose account
// pays and what it may do.
import { type AgentHarnessAttemptParamsV2, AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";
import { resolveApiKeyForProfile } from "openclaw/plugin-sdk/agent-runtime";

import type * as wire from "./wire.js";

export type AuthProfileInput = Pick<
  AgentHarnessAttemptParamsV2,
  "runtimePlan" | "authProfileId" | "resolvedApiKey" | "authProfileStore" | "agentDir" | "config" | "abortSignal"
>;

/** The inline form of wire.AuthProfileRef: the key itself. */
export type InlineAuthProfile = Required<Pick<wire.AuthProfileRef, "id" | "apiKey">>;

/** OpenClaw's resolver of a profile's key from a store (injectable for tests). */
export type ResolveKey = typeof resolveApiKeyForProfile;

export async function forwardedAuthProfile(p: AuthProfileInput, resolve: ResolveKey = resolveApiKeyForProfile): Promise<InlineAuthProfile | undefined> {
  const id = p.runtimePlan?.auth?.forwardedAuthProfileId?.trim();
  if (id === undefined || id === "") return undefined;
  const fail = (why: string): never => {
    throw new Error(`harness-operator: OpenClaw selected auth profile ${JSON.stringify(id)} for this attempt, but ${why}; the turn is not sent with the cluster's own credentials instead`);
  };
  const credential = p.authProfileStore?.profiles?.[id];
  if (credential === undefined) fail("the attempt's auth store has no such profile");
  if (credential?.type === "oauth") {
    fail("it is an OAuth login, and the cluster's harness authenticates only with an API key or a static token (use an api_key or token profile)");
  }
  let key = p.authProfileId === id ? p.resolvedApiKey?.trim() : undefined;
  if (key === undefined || key === "") {
    let resolved: Awaited<ReturnType<ResolveKey>>;
    try {
      resolved = await resolve({
        store: p.authProfileStore, profileId: id, allowProfileFallback: false,
        ...(p.config !== undefined ? { cfg: p.config } : {}),
        ...(p.agentDir !== undefined ? { agentDir: p.agentDir } : {}),
        ...(p.abortSignal !== undefined ? { signal: p.abortSignal } : {}),
      });
    } catch (err) {
      // OpenClaw's message names the profile and the reference, not the key.
      return fail(`its key could not be resolved: ${(err as Error).message}`);
    }
    key = resolved?.profileId === id ? resolved.apiKey.trim() : undefined;
  }
  if (key === undefined || key === "") return fail("it holds no key");
  return { id, apiKey: key };
}

/** What a completion-style call (an isolated completion, a side question) has of an attempt's auth. */
export type PlanAuthInput = {
  plan: unknown;
  authProfileStore: AuthProfileInput["authProfileStore"];
  agentDir: AuthProfileInput["agentDir"];
  config: AuthProfileInput["config"];
  abortSignal?: AbortSignal;
};

/**
 * The profile a completion-style call's auth plan forwards, as
 * forwardedAuthProfile reads an attempt's (it reads only the plan of the
 * runtimePlan). A key that cannot be resolved refuses the call as operation,
 * with userMessage.
 */
export async function planAuthProfile(
  p: PlanAuthInput,
  operation: string,
  userMessage: string,
  resolve?: ResolveKey,
): Promise<InlineAuthProfile | undefined> {
  const input: AuthProfileInput = {
    runtimePlan: { auth: p.plan } as unknown as NonNullable<AuthProfileInput["runtimePlan"]>,
    authProfileStore: p.authProfileStore,
  };
  if (p.agentDir !== undefined) input.agentDir = p.agentDir;
  if (p.config !== undefined) input.config = p.config;
  if (p.abortSignal !== undefined) input.abortSignal = p.abortSignal;
  try {
    return await forwardedAuthProfile(input, resolve);
  } catch (err) {
    throw new AgentHarnessPreflightError(`harness-operator ${operation} refused: ${(err as Error).message}`, { userMessage });
  }
}
