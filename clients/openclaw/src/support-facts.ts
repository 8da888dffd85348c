// OpenClaw hands supports() one route fact that the attempt's params do not
// carry: endpointOverrides ("present" when the gateway's config authored the
// route's api or baseUrl; OpenClaw works it out from its config while it
// selects the harness, and the harness SDK forbids a harness to read that config
// after selection). SupportFacts remembers it from supports() under the
// facts both carry (provider, model, api, baseUrl, requestTransportOverrides,
// runtimePolicy, preparedAuth), and the attempt's route facts take it from
// the entry with exactly its own: the dispatcher then gets every fact
// OpenClaw prepared, and a question OpenClaw never asked adds nothing.
import type { ModelProvider } from "./route-facts.js";
import type { SupportQuestion } from "./registry.js";

type Presence = NonNullable<ModelProvider["endpointOverrides"]>;

// Distinct routes of one gateway: a few per model. Past the bound the
// oldest entry goes (Map keeps insertion order).
const MAX_ROUTES = 512;

export class SupportFacts {
  private readonly byRoute = new Map<string, Presence>();

  /** Remembers what OpenClaw told supports() about a route. */
  remember(ctx: SupportQuestion): void {
    const f = ctx.modelProvider;
    const ep = f?.endpointOverrides;
    if (f === undefined || (ep !== "none" && ep !== "present")) return;
    const key = routeKey(ctx.provider, ctx.modelId, f);
    this.byRoute.delete(key);
    this.byRoute.set(key, ep);
    if (this.byRoute.size > MAX_ROUTES) this.byRoute.delete(this.byRoute.keys().next().value as string);
  }

  /** The endpointOverrides OpenClaw gave supports() for exactly these facts, if it did. */
  endpointOverrides(provider: string, modelId: string | undefined, facts: ModelProvider): Presence | undefined {
    return this.byRoute.get(routeKey(provider, modelId, facts));
  }
}

// Every fact both sides carry, in a fixed order: a difference in any of them
// (a runtimePolicy listing other ids, another auth mode) is another route.
type SharedFacts = {
  api?: string | undefined;
  baseUrl?: string | undefined;
  requestTransportOverrides?: string | undefined;
  runtimePolicy?: { readonly compatibleIds: readonly string[] } | undefined;
  preparedAuth?: { source: string; mode?: string | undefined; requirement?: string | undefined } | undefined;
};

function routeKey(provider: string, modelId: string | undefined, f: SharedFacts): string {
  const auth = f.preparedAuth;
  return JSON.stringify([
    provider,
    modelId ?? null,
    f.api ?? null,
    f.baseUrl ?? null,
    f.requestTransportOverrides ?? null,
    f.runtimePolicy?.compatibleIds ?? null,
    auth === undefined ? null : [auth.source, auth.mode ?? null, auth.requirement ?? null],
  ]);
}
