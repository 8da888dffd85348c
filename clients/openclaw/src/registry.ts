// SupportRegistry answers OpenClaw's synchronous supports(ctx): OpenClaw reads
// `.supported` directly, about ten times a turn, so the answer comes from
// state held in memory. For now that state is the configured `routes`; the
// plan is to keep it current from the cluster's AgentHarnesses and
// RuntimePolicies in the background. Either way it only predicts the
// cluster's decision: the dispatcher decides at runAttempt.
import type { AgentHarnessSupport, AgentHarnessSupportContext } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { RouteSupport } from "./config.js";

export class SupportRegistry {
  private routes: readonly RouteSupport[];

  constructor(routes: readonly RouteSupport[]) {
    this.routes = routes;
  }

  /** Replaces what the registry knows (a background refresh). */
  replace(routes: readonly RouteSupport[]): void {
    this.routes = routes;
  }

  supports(ctx: Pick<AgentHarnessSupportContext, "provider" | "modelId">): AgentHarnessSupport {
    // A model's own entry wins over its provider's.
    const route =
      this.routes.find((r) => r.provider === ctx.provider && r.model !== undefined && r.model === ctx.modelId) ??
      this.routes.find((r) => r.provider === ctx.provider && r.model === undefined);
    const model = `${ctx.provider}/${ctx.modelId ?? "*"}`;
    if (route === undefined) {
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
