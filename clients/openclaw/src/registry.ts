// SupportRegistry answers OpenClaw's synchronous supports(ctx): OpenClaw reads
// `.supported` directly, about ten times a turn, so the answer comes from
// state held in memory: the configured `routes` first (an entry that matches
// is the gateway operator's own answer), then the cluster registry's
// prediction from the AgentHarnesses and RuntimePolicies it keeps current in
// the background. Either way it only predicts the cluster's decision: the
// dispatcher decides at runAttempt.
import type { AgentHarnessSupport, AgentHarnessSupportContext } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { RouteSupport } from "./config.js";

/** The cluster registry's answer (cluster-registry.ts), when the plugin reads the cluster. */
export type ClusterSupport = { supports(ctx: SupportQuestion): AgentHarnessSupport };

/** What supports() reads of OpenClaw's context. */
export type SupportQuestion = Pick<AgentHarnessSupportContext, "provider" | "modelId" | "modelProvider">;

export class SupportRegistry {
  private routes: readonly RouteSupport[];

  constructor(
    routes: readonly RouteSupport[],
    private readonly cluster?: ClusterSupport,
  ) {
    this.routes = routes;
  }

  /** Replaces what the registry knows (a background refresh). */
  replace(routes: readonly RouteSupport[]): void {
    this.routes = routes;
  }

  supports(ctx: SupportQuestion): AgentHarnessSupport {
    // A model's own entry wins over its provider's.
    const route =
      this.routes.find((r) => r.provider === ctx.provider && r.model !== undefined && r.model === ctx.modelId) ??
      this.routes.find((r) => r.provider === ctx.provider && r.model === undefined);
    const model = `${ctx.provider}/${ctx.modelId ?? "*"}`;
    if (route === undefined) {
      if (this.cluster !== undefined) return this.cluster.supports(ctx);
      return { supported: false, reason: `harness-operator: no cluster harness is known to serve ${model}` };
    }
    if (route.supported) {
      const yes: AgentHarnessSupport = { supported: true, priority: route.priority ?? 100 };
      if (route.reason !== undefined) yes.reason = route.reason;
      return yes;
    }
    const no: AgentHarnessSupport = { supported: false, reason: route.reason ?? `harness-operator: the cluster does not run ${model}` };
    if (route.fallbackRuntime !== undefined) no.fallbackRuntime = route.fallbackRuntime;
    return no;
  }
}
