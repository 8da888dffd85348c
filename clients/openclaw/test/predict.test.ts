import { test } from "node:test";
import assert from "node:assert/strict";

import type { AgentHarness, RuntimePolicy } from "../src/cluster-types.js";
import { predict, type Question, type RegistryView, type RouteFacts } from "../src/predict.js";

// Harnesses as the API server lists them. codex omits support: the adapter's
// defaults apply (internal/policy/selection/defaults.go AdapterDefaults).
const codex: AgentHarness = { metadata: { name: "codex", namespace: "agents", creationTimestamp: "2026-01-01T00:00:00Z" }, spec: { adapter: "codex-app-server" } };
const claude: AgentHarness = {
  metadata: { name: "claude-pool", namespace: "agents", creationTimestamp: "2026-01-02T00:00:00Z" },
  spec: { harnessId: "claude", adapter: "other", support: { providers: ["anthropic"], priority: 50, routePolicy: "Any" } },
};
const explicitOnly: AgentHarness = {
  metadata: { name: "gemini", namespace: "agents" },
  spec: { adapter: "other", autoSelection: { mode: "ExplicitOnly" }, support: { providers: ["google"], routePolicy: "Any" } },
};
// A harness for provider acme whose routes must list it (routePolicy MustListHarness).
const routeBound: AgentHarness = {
  metadata: { name: "acme-pool", namespace: "agents", creationTimestamp: "2026-01-03T00:00:00Z" },
  spec: { adapter: "other", support: { providers: ["acme"], routePolicy: "MustListHarness" } },
};
// An older harness with the id codex that serves only provider codex: it is the one that counts.
const olderCodex: AgentHarness = {
  metadata: { name: "codex-old", namespace: "agents", creationTimestamp: "2025-06-01T00:00:00Z" },
  spec: { harnessId: "codex", adapter: "codex-app-server", support: { providers: ["codex"] } },
};

function policy(name: string, spec: RuntimePolicy["spec"], created = "2026-01-01T00:00:00Z"): RuntimePolicy {
  return { metadata: { name, creationTimestamp: created }, spec };
}

// Route facts as OpenClaw prepares them (ctx.modelProvider).
const official: RouteFacts = { api: "openai-responses", baseUrl: "https://api.openai.com/v1", requestTransportOverrides: "none", runtimePolicy: { compatibleIds: ["codex"] } };
const loopback: RouteFacts = { api: "openai-responses", baseUrl: "http://127.0.0.1:9/v1", requestTransportOverrides: "none" };
const authored: RouteFacts = { ...official, requestTransportOverrides: "present" };

const fresh = (harnesses: AgentHarness[], policies: RuntimePolicy[] = []): RegistryView => ({ state: "fresh", harnesses, policies });
const openai = (route?: RouteFacts, modelId = "gpt-5.5"): Question => (route === undefined ? { provider: "openai", modelId } : { provider: "openai", modelId, route });

type Want = { supported: boolean; priority?: number; fallbackRuntime?: "openclaw"; reason: RegExp };
const run = (priority: number, reason: RegExp): Want => ({ supported: true, priority, reason });
const embedded = (reason: RegExp): Want => ({ supported: false, fallbackRuntime: "openclaw", reason });
const refused = (reason: RegExp): Want => ({ supported: false, reason });
const deferred = (reason: RegExp): Want => ({ supported: true, reason });

// Each row names the Go rule it mirrors (internal/policy/selection file and function).
const rows: Array<[string, RegistryView, Question, Want]> = [
  ["select.go engine.decide: a policy runtime of openclaw is forced_openclaw",
    fresh([codex], [policy("embedded", { providers: [{ provider: "openai", runtime: "openclaw" }] })]), openai(official),
    embedded(/embedded runtime \(forced_openclaw: RuntimePolicy embedded asks for openclaw\)/)],
  ["select.go engine.decide + candidates.go evaluate (modeExplicit): a policy naming a harness that supports the route runs there",
    fresh([codex], [policy("codex-only", { models: [{ ref: "openai/gpt-5.5", runtime: "codex" }] })]), openai(official),
    run(100, /on agent harness "codex" \(forced_plugin: RuntimePolicy codex-only\)/)],
  ["support.go supportsRoute: without route facts an explicit harness is checked for the provider only",
    fresh([codex], [policy("codex-only", { providers: [{ provider: "openai", runtime: "codex" }] })]), openai(),
    run(100, /on agent harness "codex"/)],
  ["candidates.go evaluate (modeImplicit): no policy, openai, no route facts is openclaw (the openai/* prefix alone never selects codex)",
    fresh([codex]), openai(),
    embedded(/auto_openclaw: no route facts, and the openai\/\* prefix alone never selects codex/)],
  ["candidates.go evaluate (modeImplicit): no policy, openai on the official Responses route is implicit codex",
    fresh([codex]), openai(official),
    run(100, /implicit codex on the official route/)],
  ["support.go officialOpenAIRoute: a loopback base URL is not official, auto stays on openclaw",
    fresh([codex]), openai(loopback),
    embedded(/auto_openclaw: not an official OpenAI Responses route/)],
  ["candidates.go evaluate (modeImplicit): no codex harness visible is implicit_plugin_unavailable_openclaw",
    fresh([claude]), openai(official),
    embedded(/implicit_plugin_unavailable_openclaw/)],
  ["support.go supportsRoute (MustListHarness): route facts without a runtime policy fail an explicit codex closed",
    fresh([codex], [policy("codex-only", { providers: [{ provider: "openai", runtime: "codex" }] })]), openai(loopback),
    refused(/HarnessUnsupported: agent harness "codex" does not support openai\/gpt-5\.5 \(route runtime policy is not declared\)/)],
  ["support.go supportsRoute (UnsupportedWithFallback): authored request overrides fall back to openclaw",
    fresh([codex], [policy("codex-only", { providers: [{ provider: "openai", runtime: "codex" }] })]), openai(authored),
    embedded(/plugin_declared_fallback_openclaw: "codex" request transport overrides are present/)],
  ["select.go engine.decide: a runtime no visible harness has is HarnessNotRegistered",
    fresh([codex], [policy("pool", { providers: [{ provider: "openai", runtime: "codex-pool" }] })]), openai(official),
    refused(/HarnessNotRegistered: RuntimePolicy pool asks for agent harness "codex-pool"/)],
  ["candidates.go evaluate (modeAuto): another provider asks every admitted harness, the first that supports it runs",
    fresh([codex, claude]), { provider: "anthropic", modelId: "claude-sonnet-4" },
    run(50, /on agent harness "claude" \(auto_plugin\)/)],
  ["support.go claimsWithoutFacts: without route facts auto does not claim a route-bound harness for a provider not native to it",
    fresh([routeBound]), { provider: "acme", modelId: "m1" },
    embedded(/auto_openclaw: no admitted harness supports it/)],
  ["support.go claimsWithoutFacts: a provider native to the harness is claimed without route facts",
    fresh([codex]), { provider: "codex", modelId: "gpt-5.5" },
    run(100, /on agent harness "codex" \(auto_plugin\)/)],
  ["support.go claimsWithoutFacts: route facts that list the route-bound harness select it",
    fresh([routeBound]), { provider: "acme", modelId: "m1", route: { api: "acme-api", baseUrl: "https://acme.example/v1", requestTransportOverrides: "none", runtimePolicy: { compatibleIds: ["acme-pool"] } } },
    run(0, /on agent harness "acme-pool" \(auto_plugin\)/)],
  ["candidates.go evaluate (modeAuto): no harness supports the provider is auto_openclaw",
    fresh([codex, claude]), { provider: "mistral", modelId: "large" },
    embedded(/auto_openclaw: no admitted harness supports it/)],
  ["support.go autoAdmits: an explicit-only harness is never chosen by auto",
    fresh([explicitOnly]), { provider: "google", modelId: "gemini-3" },
    embedded(/auto_openclaw/)],
  ["policy.go ResolvePolicy: an exact model entry beats the provider-wide runtime",
    fresh([codex], [policy("mixed", { providers: [{ provider: "openai", runtime: "openclaw" }], models: [{ ref: "openai/gpt-5.5", runtime: "codex" }] })]), openai(official),
    run(100, /RuntimePolicy mixed/)],
  ["policy.go ResolvePolicy: a bare model ref matches, and a modelId that repeats its provider is split (SplitModel)",
    fresh([codex], [policy("bare", { models: [{ ref: "gpt-5.5", runtime: "openclaw" }] })]), openai(official, "openai/gpt-5.5"),
    embedded(/forced_openclaw: RuntimePolicy bare/)],
  ["policy.go ResolvePolicy: at the same level the older policy wins",
    fresh([codex], [
      policy("newer", { providers: [{ provider: "openai", runtime: "openclaw" }] }, "2026-03-01T00:00:00Z"),
      policy("older", { providers: [{ provider: "openai", runtime: "codex" }] }, "2026-02-01T00:00:00Z"),
    ]), openai(official),
    run(100, /RuntimePolicy older/)],
  ["policy.go ResolvePolicy: a Deny policy enforces its entry over a more specific Allow entry",
    fresh([codex], [
      policy("allow", { models: [{ ref: "openai/gpt-5.5", runtime: "codex" }] }, "2026-01-01T00:00:00Z"),
      policy("deny", { sessionOverrides: "Deny", providers: [{ provider: "openai", runtime: "openclaw" }] }, "2026-02-01T00:00:00Z"),
    ]), openai(official),
    embedded(/RuntimePolicy deny asks for openclaw/)],
  ["select.go engine.enforce: an override contradicting a Deny policy is OverrideDenied",
    fresh([codex], [policy("deny", { sessionOverrides: "Deny", providers: [{ provider: "openai", runtime: "codex" }] })]), { ...openai(official), override: "openclaw" },
    refused(/OverrideDenied: runtime override "openclaw" contradicts RuntimePolicy "deny"/)],
  ["select.go engine.decide: a session override wins over an Allow policy",
    fresh([codex], [policy("allow", { providers: [{ provider: "openai", runtime: "openclaw" }] })]), { ...openai(official), override: "codex-app-server" },
    run(100, /forced_plugin: the session's override/)],
  ["policy.go CLIBackendProvider: a CLI backend alias for the provider passes through to openclaw",
    fresh([claude], [policy("cli", { providers: [{ provider: "anthropic", runtime: "claude-cli" }] })]), { provider: "anthropic", modelId: "claude-sonnet-4" },
    embedded(/cli_runtime_passthrough_openclaw/)],
  ["candidates.go newView/compareViews: of two harnesses with one id the older counts",
    fresh([codex, olderCodex], [policy("codex-only", { providers: [{ provider: "openai", runtime: "codex" }] })]), openai(official),
    refused(/HarnessUnsupported: .*\(provider is not supported\)/)],
  ["policy.go bestEntry (agent entries): an agent's own entry is not knowable in supports(), the dispatcher decides",
    fresh([codex], [policy("agent", { agents: [{ agentId: "ops", models: [{ ref: "openai/*", runtime: "openclaw" }] }] })]), openai(official),
    deferred(/an agent's own entry .* the dispatcher decides openai\/gpt-5\.5 at runAttempt/)],
  ["(no Go rule: the registry) nothing read yet: the dispatcher decides",
    { state: "empty", detail: "not read yet; last error: 403 Forbidden" }, openai(official),
    deferred(/the cluster registry is empty \(not read yet; last error: 403 Forbidden\); the dispatcher decides/)],
  ["(no Go rule: the registry) a stale snapshot is not trusted: the dispatcher decides",
    { state: "stale", detail: "last read 95 s ago" }, openai(),
    deferred(/the cluster registry is stale \(last read 95 s ago\)/)],
];

test("supports() predicts the cluster's decision as internal/policy/selection makes it", () => {
  for (const [name, view, q, want] of rows) {
    const got = predict(view, q);
    const { reason, ...shape } = got;
    const { reason: wantReason, ...wantShape } = want;
    assert.deepEqual(shape, wantShape, name);
    assert.match(reason ?? "", wantReason, name);
  }
});
