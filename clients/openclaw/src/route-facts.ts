// The attempt's route facts (the turn's `modelProvider`): the secret-free
// facts OpenClaw prepared for the selected route, projected the way
// OpenClaw's own harness selection projects the same attempt for
// supports(), so the dispatcher decides on exactly what the gateway decided
// on. Nothing is filled in: a fact OpenClaw did not prepare is not sent (the
// seed: "missing runtimePolicy stays undeclared instead of being inferred"),
// and an attempt whose route/auth preparation is still pending (no
// runtimePlan.auth) sends no route facts at all, so the session's pin
// decides (docs/dispatcher-api.md "Selection: the pin and route facts").
import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import type * as wire from "./wire.js";

/**
 * wire.ModelProvider as this plugin fills it in: the dispatcher requires a
 * prepared auth's source, and a declared policy always lists its ids.
 */
export type ModelProvider = Omit<wire.ModelProvider, "runtimePolicy" | "preparedAuth"> & {
  runtimePolicy?: Required<wire.RouteRuntimePolicy>;
  preparedAuth?: wire.PreparedAuth & Required<Pick<wire.PreparedAuth, "source">>;
};

export type RouteInput = Pick<AgentHarnessAttemptParamsV2, "provider" | "modelId" | "model" | "runtimePlan">;

/** What OpenClaw told supports() and the attempt does not carry (support-facts.ts). */
export type SupportOnlyFacts = { endpointOverrides(provider: string, modelId: string | undefined, facts: ModelProvider): ModelProvider["endpointOverrides"] };

export function routeFacts(p: RouteInput, told?: SupportOnlyFacts): ModelProvider | undefined {
  const auth = p.runtimePlan?.auth;
  if (auth === undefined) return undefined;
  const out: ModelProvider = {};
  // The attempt's prepared model is the transport supports() was asked about.
  if (p.model?.api !== undefined) out.api = p.model.api;
  if (p.model?.baseUrl !== undefined) out.baseUrl = p.model.baseUrl;
  // The concrete route, or the support every route left to harness-owned
  // auth shares. When neither was prepared, requestTransportOverrides stays
  // absent and the dispatcher refuses the turn naming the field: failing
  // closed beats a guessed "none".
  const support = auth.modelRoute ?? auth.deferredRouteSupport;
  if (support !== undefined) {
    out.requestTransportOverrides = support.requestTransportOverrides;
    if (support.runtimePolicy !== undefined) out.runtimePolicy = { compatibleIds: [...support.runtimePolicy.compatibleIds] };
  }
  const preparedAuth: NonNullable<ModelProvider["preparedAuth"]> = { source: authSource(auth) };
  if (auth.selectedAuthMode !== undefined && auth.selectedAuthMode !== "") preparedAuth.mode = auth.selectedAuthMode;
  if (auth.modelRoute !== undefined) preparedAuth.requirement = auth.modelRoute.authRequirement;
  out.preparedAuth = preparedAuth;
  const endpoint = told?.endpointOverrides(p.provider, p.modelId, out);
  if (endpoint !== undefined) out.endpointOverrides = endpoint;
  return out;
}

// Who owns the credential of the attempt: a forwarded auth profile, a
// directly selected credential mode, the harness's own login, or nobody.
function authSource(auth: NonNullable<RouteInput["runtimePlan"]>["auth"]): NonNullable<ModelProvider["preparedAuth"]>["source"] {
  if (auth.forwardedAuthProfileId) return "profile";
  if (auth.selectedAuthMode) return "direct";
  if (auth.harnessAuthProvider) return "harness";
  return "none";
}
