// predict: what the cluster would decide for a (provider, model) — the pure
// part of supports(ctx). It mirrors the rules of internal/policy/selection that a
// gateway's question reaches (each function names its Go counterpart) on the
// snapshot the cluster registry keeps: the AgentHarnesses visible to the
// namespace and the RuntimePolicies selecting it. It answers in the harness SDK's
// shape: supported (a cluster harness would run the turn), fallbackRuntime
// "openclaw" (the cluster would choose the embedded runtime: the dispatcher
// answers EmbeddedRuntimeSelected), or unsupported without fallback (the
// cluster would refuse: fail closed). Where supports() cannot know what the
// cluster would use — no snapshot, a stale one, an agent's own policy entry,
// an unknown provider — it says so and answers supported, leaving the
// decision to the dispatcher at runAttempt (docs/openclaw-plugin.md, "The
// cluster registry", says why). Readiness, version floors and tool policy
// are not predicted either: they are the turn's, and the dispatcher's
// refusal for them carries the scope OpenClaw's fallback chain reads.
import type { AgentHarnessSupport, AgentHarnessSupportContext } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { AgentHarness, RuntimePolicy } from "./cluster-types.js";

/** The route facts OpenClaw prepared (ctx.modelProvider), as the dispatcher reads them. */
export type RouteFacts = NonNullable<AgentHarnessSupportContext["modelProvider"]>;

/** What the registry knows: a snapshot, or why there is none to trust. */
export type RegistryView =
  | { state: "fresh"; harnesses: readonly AgentHarness[]; policies: readonly RuntimePolicy[] }
  | { state: "empty" | "stale"; detail: string };

export type Question = {
  provider: string;
  modelId?: string;
  /** The session's spec.runtimeOverride, when known (supports() does not know the session). */
  override?: string;
  route?: RouteFacts;
};

const PREFIX = "harness-operator:";

export function predict(view: RegistryView, q: Question): AgentHarnessSupport {
  const provider = normalizeProvider(q.provider);
  const model = splitModel(provider, q.modelId ?? "");
  const label = model === "" ? provider : `${provider}/${model}`;
  const defer = (why: string): AgentHarnessSupport => ({
    supported: true,
    reason: `${PREFIX} ${why}; the dispatcher decides ${label || "this model"} at runAttempt`,
  });
  if (view.state !== "fresh") return defer(`the cluster registry is ${view.state} (${view.detail})`);
  if (provider === "") return defer("the provider is unknown");
  if (agentEntries(view.policies, provider, model)) {
    return defer("a RuntimePolicy has an agent's own entry for it, and supports() does not know the agent");
  }
  const openclaw = (why: string): AgentHarnessSupport => ({
    supported: false,
    reason: `${PREFIX} the cluster would run ${label} on the embedded runtime (${why})`,
    fallbackRuntime: "openclaw",
  });
  const refuse = (code: string, message: string): AgentHarnessSupport => ({
    supported: false,
    reason: `${PREFIX} the cluster would refuse ${label}: ${code}: ${message}`,
  });
  const run = (v: HarnessView, why: string): AgentHarnessSupport => ({
    supported: true,
    priority: v.priority,
    reason: `${PREFIX} the cluster would run ${label} on agent harness "${v.id}" (${why})`,
  });

  // select.go engine.decide: override > policy > auto (no session, so no pin).
  const pol = resolvePolicy(view.policies, provider, model);
  let override = q.override === undefined ? "" : normalizeRuntimeID(q.override);
  if (override === "auto") override = "";
  const requested = override !== "" ? override : pol.runtime;
  const source = override !== "" ? "the session's override" : pol.policy !== "" ? `RuntimePolicy ${pol.policy}` : "no RuntimePolicy";
  // select.go engine.enforce: a Deny policy refuses a contradicting override.
  if (pol.enforced && override !== "" && override !== pol.runtime) {
    return refuse("OverrideDenied", `runtime override "${override}" contradicts RuntimePolicy "${pol.policy}" (sessionOverrides: Deny), which requires "${pol.runtime}"`);
  }
  const views = harnessViews(view.harnesses);
  if (requested === "auto") {
    return provider === "openai" ? implicitCodex(views, provider, q.route, run, openclaw) : auto(views, provider, q.route, run, openclaw);
  }
  if (requested === "openclaw") return openclaw(`forced_openclaw: ${source} asks for openclaw`);
  if (cliBackendProvider(requested) === provider) return openclaw(`cli_runtime_passthrough_openclaw: ${source} names ${requested}`);
  const target = views.find((v) => v.counts && v.id === requested);
  if (target === undefined) return refuse("HarnessNotRegistered", `${source} asks for agent harness "${requested}", which is not registered`);
  // candidates.go evaluate, modeExplicit: support facts without autoSelection.
  const s = supports(target, provider, q.route);
  if (s.ok) return run(target, `forced_plugin: ${source}`);
  if (s.fallback) return openclaw(`plugin_declared_fallback_openclaw: "${target.id}" ${s.reason}`);
  return refuse("HarnessUnsupported", `agent harness "${target.id}" does not support ${label} (${s.reason})`);
}

type Answer = (v: HarnessView, why: string) => AgentHarnessSupport;
type Fallback = (why: string) => AgentHarnessSupport;

// candidates.go evaluate, modeImplicit: `auto` for openai asks no plugin; it
// is codex on an official Responses route only.
function implicitCodex(views: HarnessView[], provider: string, route: RouteFacts | undefined, run: Answer, openclaw: Fallback): AgentHarnessSupport {
  // The harness SDK: "The openai/* prefix alone never selects Codex."
  if (route === undefined) return openclaw("auto_openclaw: no route facts, and the openai/* prefix alone never selects codex");
  if (!officialOpenAIRoute(route)) return openclaw("auto_openclaw: not an official OpenAI Responses route");
  const codex = views.find((v) => v.counts && v.id === "codex");
  if (codex === undefined) return openclaw("implicit_plugin_unavailable_openclaw: no agent harness codex");
  const admitted = autoAdmits(codex, provider);
  const s = supports(codex, provider, route);
  if (!admitted.ok || !s.ok) return openclaw(`implicit_plugin_unsupported_openclaw: codex ${admitted.ok ? s.reason : admitted.reason}`);
  return run(codex, "forced_plugin: implicit codex on the official route");
}

// candidates.go evaluate, modeAuto: the first admitted harness that supports
// the route, by priority (then id, then age).
function auto(views: HarnessView[], provider: string, route: RouteFacts | undefined, run: Answer, openclaw: Fallback): AgentHarnessSupport {
  const byPriority = views.filter((v) => v.counts).sort((a, b) => b.priority - a.priority);
  for (const v of byPriority) {
    // support.go claimsWithoutFacts: without route facts a route-bound harness
    // is not claimed for a provider that is not native to it.
    const claims = route !== undefined || v.support?.routePolicy === "Any" || includesFold(v.support?.nativeProviders, provider);
    if (autoAdmits(v, provider).ok && supports(v, provider, route).ok && claims) return run(v, "auto_plugin");
  }
  return openclaw("auto_openclaw: no admitted harness supports it");
}

// --- Harness views (candidates.go newView, harnessID, compareViews) ---

type Support = NonNullable<AgentHarness["spec"]["support"]>;

type HarnessView = {
  h: AgentHarness;
  id: string;
  support: Support | undefined;
  priority: number;
  /** False for a reserved id, or an id an older visible harness also uses. */
  counts: boolean;
};

// defaults.go AdapterDefaults(codex-app-server): an omitted support block.
const CODEX_DEFAULT_SUPPORT: Support = {
  providers: ["codex", "openai"],
  priority: 100,
  requestTransportOverrides: "UnsupportedWithFallback",
  routePolicy: "MustListHarness",
  nativeProviders: ["codex"],
  preparedAuth: { subscriptionModes: ["oauth", "token"], apiKeyModes: ["api-key", "api_key"] },
};

/** The views in id-then-age order (the order lookup and ties use). */
function harnessViews(harnesses: readonly AgentHarness[]): HarnessView[] {
  const views = harnesses.map((h): HarnessView => {
    const id = (h.spec.harnessId || h.metadata.name).trim().toLowerCase();
    const n = normalizeRuntimeID(id);
    const support = h.spec.support ?? (h.spec.adapter === "codex-app-server" ? CODEX_DEFAULT_SUPPORT : undefined);
    return { h, id, support, priority: support?.priority ?? 0, counts: !(n !== id || n === "auto" || n === "openclaw") };
  });
  views.sort((a, b) => compare(a.id, b.id) || age(a.h) - age(b.h) || compare(a.h.metadata.namespace ?? "", b.h.metadata.namespace ?? "") || compare(a.h.metadata.name, b.h.metadata.name));
  views.forEach((v, i) => {
    const prev = views[i - 1];
    if (prev !== undefined && prev.id === v.id) v.counts = false;
  });
  return views;
}

// support.go autoAdmits.
function autoAdmits(v: HarnessView, provider: string): { ok: boolean; reason: string } {
  const as = v.h.spec.autoSelection;
  switch (as?.mode ?? "") {
    case "":
    case "AllProviders":
      return { ok: true, reason: "" };
    case "ExplicitOnly":
      return { ok: false, reason: "harness is explicit-only" };
    case "Listed":
      return includesFold(as?.providers, provider) ? { ok: true, reason: "" } : { ok: false, reason: "provider is not auto-selectable" };
  }
  return { ok: false, reason: "unknown autoSelection mode" };
}

// support.go supportsProvider then supportsRoute, in the harness SDK's order.
function supports(v: HarnessView, provider: string, route: RouteFacts | undefined): { ok: boolean; fallback: boolean; reason: string } {
  const no = (reason: string, fallback = false) => ({ ok: false, fallback, reason });
  const s = v.support;
  if (s === undefined) return no("has no support facts");
  if ((s.providers?.length ?? 0) > 0 && !includesFold(s.providers, provider)) return no("provider is not supported");
  if (route === undefined) return { ok: true, fallback: false, reason: "" };
  if (route.requestTransportOverrides !== "none") {
    if (s.requestTransportOverrides === "UnsupportedWithFallback") return no("request transport overrides are present", true);
    if (s.requestTransportOverrides !== "Supported") return no("request transport overrides are present");
  }
  // A declared policy without ids lists nothing (the Go side reads an empty list).
  const compat = route.runtimePolicy === undefined ? undefined : (route.runtimePolicy.compatibleIds ?? []).map(normalizeRuntimeID);
  if (compat !== undefined || !includesFold(s.nativeProviders, provider)) {
    if (s.routePolicy !== "Any" && compat === undefined) return no("route runtime policy is not declared");
    if (s.routePolicy !== "Any" && s.routePolicy !== "MustBeDeclared" && !(compat ?? []).includes(v.id)) {
      return no("route runtime policy does not list the harness");
    }
  }
  const pa = route.preparedAuth;
  if (pa?.requirement !== undefined && s.preparedAuth !== undefined) {
    const mode = (pa.mode ?? "").trim().toLowerCase();
    if (pa.requirement === "subscription") {
      if (pa.source !== "profile" || !includesFold(s.preparedAuth.subscriptionModes, mode)) return no("prepared auth does not satisfy the subscription requirement");
    } else if (pa.requirement === "api-key") {
      if ((pa.source !== "profile" && pa.source !== "direct") || !includesFold(s.preparedAuth.apiKeyModes, mode)) return no("prepared auth does not satisfy the api-key requirement");
    } else {
      return no("unknown prepared auth requirement");
    }
  }
  return { ok: true, fallback: false, reason: "" };
}

// --- Runtime policy (policy.go ResolvePolicy for a known provider) ---

// Levels, highest precedence first (agent entries are handled by agentEntries).
const LEVEL_MODEL_EXACT = 0;
const LEVEL_MODEL_BARE = 1;
const LEVEL_CATALOG = 2;
const LEVEL_PROVIDER_WILDCARD = 3;
const LEVEL_PROVIDER = 4;
const LEVEL_NONE = 5;

type Resolution = { runtime: string; policy: string; enforced: boolean };

function resolvePolicy(policies: readonly RuntimePolicy[], provider: string, model: string): Resolution {
  let winner: { p: RuntimePolicy; level: number; runtime: string } | undefined;
  let deny: { p: RuntimePolicy; runtime: string } | undefined;
  for (const p of policies) {
    const [level, runtime] = bestEntry(p, provider, model);
    if (level === LEVEL_NONE) continue;
    if (winner === undefined || level < winner.level || (level === winner.level && older(p, winner.p))) winner = { p, level, runtime };
    // A Deny policy with an entry for the key enforces: the oldest decides.
    if (p.spec.sessionOverrides === "Deny" && (deny === undefined || older(p, deny.p))) deny = { p, runtime };
  }
  if (deny !== undefined) return { runtime: deny.runtime, policy: deny.p.metadata.name, enforced: true };
  if (winner !== undefined) return { runtime: winner.runtime, policy: winner.p.metadata.name, enforced: false };
  return { runtime: "auto", policy: "", enforced: false };
}

// policy.go bestEntry and refLevel: within one policy and level the first entry counts.
function bestEntry(p: RuntimePolicy, provider: string, model: string): [number, string] {
  let level = LEVEL_NONE;
  let runtime = "";
  const consider = (l: number, rt: string): void => {
    if (l < level) [level, runtime] = [l, normalizeRuntimeID(rt)];
  };
  for (const m of p.spec.models ?? []) {
    const l = refLevel(m.ref, provider, model);
    if (l !== LEVEL_NONE) consider(l, m.runtime);
  }
  for (const pr of p.spec.providers ?? []) {
    if (!eqFold(pr.provider, provider)) continue;
    if (model !== "") for (const m of pr.models ?? []) if (eqFold(m.id, model)) consider(LEVEL_CATALOG, m.runtime);
    if (pr.runtime !== undefined && pr.runtime !== "") consider(LEVEL_PROVIDER, pr.runtime);
  }
  return [level, runtime];
}

function refLevel(ref: string, provider: string, model: string): number {
  const slash = ref.indexOf("/");
  if (slash < 0) return model !== "" && eqFold(ref, model) ? LEVEL_MODEL_BARE : LEVEL_NONE;
  const refProvider = ref.slice(0, slash);
  const refModel = ref.slice(slash + 1);
  if (refModel === "*") return eqFold(refProvider, provider) ? LEVEL_PROVIDER_WILDCARD : LEVEL_NONE;
  return model !== "" && eqFold(refModel, model) && eqFold(refProvider, provider) ? LEVEL_MODEL_EXACT : LEVEL_NONE;
}

/** Whether any policy has an agent's own entry (spec.agents[].models) for the key. */
function agentEntries(policies: readonly RuntimePolicy[], provider: string, model: string): boolean {
  return policies.some((p) => (p.spec.agents ?? []).some((a) => a.models.some((m) => refLevel(m.ref, provider, model) !== LEVEL_NONE)));
}

// policy.go comparePolicyAge: creationTimestamp, then name.
function older(a: RuntimePolicy, b: RuntimePolicy): boolean {
  return (age(a) - age(b) || compare(a.metadata.name, b.metadata.name)) < 0;
}

// --- Small rules (policy.go, support.go) ---

// policy.go NormalizeRuntimeID.
export function normalizeRuntimeID(id: string): string {
  const n = id.trim().toLowerCase();
  switch (n) {
    case "":
    case "default":
      return "auto";
    case "pi":
      return "openclaw";
    case "codex-app-server":
      return "codex";
  }
  return n;
}

function normalizeProvider(p: string): string {
  return p.trim().toLowerCase();
}

// policy.go SplitModel for a known provider: the model id without a repeated provider prefix.
function splitModel(provider: string, modelId: string): string {
  const m = modelId.trim();
  if (provider !== "" && m.length > provider.length && m[provider.length] === "/" && eqFold(m.slice(0, provider.length), provider)) {
    return m.slice(provider.length + 1);
  }
  return m;
}

// policy.go CLIBackendProvider.
function cliBackendProvider(runtime: string): string | undefined {
  return { "claude-cli": "anthropic", "google-gemini-cli": "google" }[runtime];
}

// support.go officialOpenAIRoute, splitHTTPS and chatGPTPath: an official
// route is spelled exactly (https, no port, query, fragment, escapes).
function officialOpenAIRoute(r: RouteFacts): boolean {
  if (r.requestTransportOverrides !== "none") return false;
  const m = /^https:\/\/([^/]*)(\/.*)?$/i.exec(r.baseUrl ?? "");
  if (m === null || /[?#@%\\\s]/.test(r.baseUrl ?? "")) return false;
  const host = m[1] ?? "";
  const path = m[2] ?? "";
  if (host === "" || host.includes(":")) return false;
  if (r.api === "openai-responses") return eqFold(host, "api.openai.com") && ["", "/", "/v1", "/v1/"].includes(path);
  if (r.api === "openai-chatgpt-responses") return eqFold(host, "chatgpt.com") && /^\/backend-api(\/codex)?(\/v1|\/responses)?\/?$/.test(path);
  return false;
}

function includesFold(list: readonly string[] | undefined, s: string): boolean {
  return (list ?? []).some((e) => eqFold(e, s));
}

function eqFold(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function age(o: { metadata: { creationTimestamp?: string } }): number {
  const t = Date.parse(o.metadata.creationTimestamp ?? "");
  return Number.isNaN(t) ? 0 : t;
}
