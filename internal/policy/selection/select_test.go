package selection

import (
	"cmp"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

type selectCase struct {
	name        string
	hs          []*v1alpha1.AgentHarness
	ps          []*v1alpha1.RuntimePolicy
	sess        *v1alpha1.AgentSession
	assumeReady bool
	a           *wire.Attempt

	// Expected outcome: runtime+reason, or code (then runtime and reason are empty).
	runtime string
	reason  wire.Reason
	source  v1alpha1.RuntimeSource
	code    wire.ErrorCode
	msg     string     // exact error message, when set
	scope   wire.Scope // the error's scope where it is not the code's usual one (wantScope)
	cli     string
	check   func(t *testing.T, d wire.Decision)
}

const (
	gpt       = "gpt-5.5"
	toolMsg   = " cannot enforce this conversation's tool policy. Use the embedded runtime or ask in the main conversation."
	openaiGPT = "openai/gpt-5.5"
)

// Case names that start with "rule N" check that rule of
// docs/design/contract-rules.md; the other policy, harness and session cases
// check what docs/api.md describes (its RuntimePolicy and AgentHarness
// sections, docs/controllers.md for conflicts).
var (
	denyExec = wire.ToolPolicy{Layers: []wire.ToolPolicyLayer{{Name: "agent", Deny: []string{"exec"}}}}
	codexPol = func() *v1alpha1.RuntimePolicy { return policy("openai-codex", 0, prov("openai", "codex")) }
)

func cand(t *testing.T, d wire.Decision, id string) wire.Candidate {
	t.Helper()
	for _, c := range d.Candidates {
		if c.HarnessID == id {
			return c
		}
	}
	t.Fatalf("no candidate %q in %+v", id, d.Candidates)
	return wire.Candidate{}
}

func wantCand(id string, supported bool, reason string) func(*testing.T, wire.Decision) {
	return func(t *testing.T, d wire.Decision) {
		t.Helper()
		c := cand(t, d, id)
		if c.Supported != supported || c.Reason != reason {
			t.Errorf("candidate %s = supported %v reason %q, want %v %q", id, c.Supported, c.Reason, supported, reason)
		}
	}
}

func wantMatched(names ...string) func(*testing.T, wire.Decision) {
	return func(t *testing.T, d wire.Decision) {
		t.Helper()
		if !slices.Equal(d.MatchedPolicies, names) {
			t.Errorf("matchedPolicies = %v, want %v", d.MatchedPolicies, names)
		}
	}
}

func wantRef(ns, name string) func(*testing.T, wire.Decision) {
	return func(t *testing.T, d wire.Decision) {
		t.Helper()
		if d.HarnessRef == nil || *d.HarnessRef != (wire.HarnessRef{Namespace: ns, Name: name}) {
			t.Errorf("harnessRef = %+v, want %s/%s", d.HarnessRef, ns, name)
		}
	}
}

func wantRoutes(want ...string) func(*testing.T, wire.Decision) {
	return func(t *testing.T, d wire.Decision) {
		t.Helper()
		var got []string
		for _, r := range d.Routes {
			s := r.Route + "=" + r.Runtime + "/" + string(r.Reason)
			if r.Error != nil {
				s = r.Route + "=" + string(r.Error.Code)
			}
			got = append(got, s)
		}
		if !slices.Equal(got, want) {
			t.Errorf("routes = %v, want %v", got, want)
		}
	}
}

func wantTools(restricted bool, safe ...string) func(*testing.T, wire.Decision) {
	return func(t *testing.T, d wire.Decision) {
		t.Helper()
		if d.ToolPolicy == nil {
			t.Fatalf("toolPolicy is nil")
		}
		if d.ToolPolicy.Restricted != restricted || !slices.Equal(d.ToolPolicy.SafeDeniedTools, safe) {
			t.Errorf("toolPolicy = %+v, want restricted %v safe %v", d.ToolPolicy, restricted, safe)
		}
	}
}

func all(checks ...func(*testing.T, wire.Decision)) func(*testing.T, wire.Decision) {
	return func(t *testing.T, d wire.Decision) {
		t.Helper()
		for _, c := range checks {
			c(t, d)
		}
	}
}

func wantScope(code wire.ErrorCode) wire.Scope {
	switch code {
	case wire.CodeHarnessUnavailable, wire.CodeVersionBelowFloor, wire.CodeToolPolicyUnenforceable:
		return wire.ScopeHarness
	}
	return ""
}

// selectCases is the decision table: TestSelect checks it, and
// TestDecisionTable exports it for the OpenClaw plugin's prediction.
func selectCases() []selectCase {
	return slices.Concat(normalizationCases(), precedenceCases(), denyCases(), autoCases(),
		implicitCases(), explicitCases(), supportCases(), retrySetCases(), toolPolicyCases(), sessionCases())
}

func TestSelect(t *testing.T) {
	cases := selectCases()
	if len(cases) < 100 {
		t.Fatalf("only %d cases", len(cases))
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) { runSelectCase(t, tc) })
	}
}

// selectedAuthBootstrap is the spec.authBootstrap of the harness d selected
// (the API's default Harness when unset), or none.
func selectedAuthBootstrap(snap Snapshot, d wire.Decision) v1alpha1.AuthBootstrap {
	if d.HarnessRef == nil {
		return ""
	}
	for _, h := range snap.Harnesses {
		if h.Namespace == d.HarnessRef.Namespace && h.Name == d.HarnessRef.Name {
			if h.Spec.AuthBootstrap == "" {
				return v1alpha1.AuthBootstrapHarness
			}
			return h.Spec.AuthBootstrap
		}
	}
	return ""
}

func runSelectCase(t *testing.T, tc selectCase) {
	snap := Snapshot{Harnesses: tc.hs, Policies: tc.ps, Session: tc.sess, AssumeReadyWithoutStatus: tc.assumeReady}
	before := deepCopySnapshot(snap)
	var attemptBefore wire.Attempt
	if tc.a != nil {
		attemptBefore = deepCopyAttempt(tc.a)
	}

	d := Select(snap, tc.a)

	if !reflect.DeepEqual(before, deepCopySnapshot(snap)) {
		t.Errorf("Select modified the snapshot")
	}
	if tc.a != nil && !reflect.DeepEqual(attemptBefore, deepCopyAttempt(tc.a)) {
		t.Errorf("Select modified the attempt")
	}
	if again := Select(snap, tc.a); !reflect.DeepEqual(d, again) {
		t.Errorf("Select is not deterministic:\n%+v\n%+v", d, again)
	}
	if _, err := json.Marshal(d); err != nil {
		t.Errorf("decision does not marshal: %v", err)
	}
	// seed: "A trusted harness that can authenticate through its own native
	// runtime may set authBootstrap: "harness"" — the decision carries the
	// selected harness's declaration, and none without a selected harness.
	if want := selectedAuthBootstrap(snap, d); d.AuthBootstrap != want {
		t.Errorf("authBootstrap = %q, want %q", d.AuthBootstrap, want)
	}

	if tc.code != "" {
		if d.Error == nil {
			t.Fatalf("want error %s, got runtime %q reason %q", tc.code, d.Runtime, d.Reason)
		}
		if d.Error.Code != tc.code {
			t.Fatalf("error = %s (%s), want %s", d.Error.Code, d.Error.Message, tc.code)
		}
		scope := cmp.Or(tc.scope, wantScope(tc.code))
		if d.Error.Scope != scope || d.Error.Retryable != tc.code.Retryable() {
			t.Errorf("error scope %q retryable %v, want %q %v", d.Error.Scope, d.Error.Retryable, scope, tc.code.Retryable())
		}
		if tc.msg != "" && d.Error.Message != tc.msg {
			t.Errorf("message =\n%q\nwant\n%q", d.Error.Message, tc.msg)
		}
		if d.Runtime != "" || d.Reason != "" {
			t.Errorf("an error decision has runtime %q reason %q", d.Runtime, d.Reason)
		}
	} else {
		if d.Error != nil {
			t.Fatalf("unexpected error %s: %s", d.Error.Code, d.Error.Message)
		}
		if d.Runtime != tc.runtime || d.Reason != tc.reason {
			t.Errorf("runtime/reason = %q/%q, want %q/%q", d.Runtime, d.Reason, tc.runtime, tc.reason)
		}
		if plugin := d.Runtime != string(v1alpha1.RuntimeOpenClaw); plugin != (d.HarnessID != "") || plugin != (d.HarnessRef != nil) {
			t.Errorf("runtime %q with harnessId %q ref %v", d.Runtime, d.HarnessID, d.HarnessRef)
		}
	}
	if d.RuntimeSource != tc.source {
		t.Errorf("runtimeSource = %q, want %q", d.RuntimeSource, tc.source)
	}
	if d.CLIBackend != tc.cli {
		t.Errorf("cliBackend = %q, want %q", d.CLIBackend, tc.cli)
	}
	if tc.code != wire.CodeSessionMismatch {
		// Every visible harness appears among the candidates.
		if len(d.Candidates) != len(tc.hs) {
			t.Errorf("%d candidates for %d harnesses", len(d.Candidates), len(tc.hs))
		}
		for _, h := range tc.hs {
			found := false
			for _, c := range d.Candidates {
				found = found || c.HarnessRef == (wire.HarnessRef{Namespace: h.Namespace, Name: h.Name})
			}
			if !found {
				t.Errorf("harness %s/%s is not a candidate", h.Namespace, h.Name)
			}
		}
	}
	if tc.check != nil {
		tc.check(t, d)
	}
}

func deepCopySnapshot(s Snapshot) Snapshot {
	out := Snapshot{AssumeReadyWithoutStatus: s.AssumeReadyWithoutStatus}
	for _, h := range s.Harnesses {
		out.Harnesses = append(out.Harnesses, h.DeepCopy())
	}
	for _, p := range s.Policies {
		out.Policies = append(out.Policies, p.DeepCopy())
	}
	out.Session = s.Session.DeepCopy()
	return out
}

func deepCopyAttempt(a *wire.Attempt) wire.Attempt {
	data, err := json.Marshal(a)
	if err != nil {
		panic(err)
	}
	var out wire.Attempt
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

func normalizationCases() []selectCase {
	return []selectCase{
		{
			name:    "issue: runtime ids are trimmed and lowercased",
			hs:      []*v1alpha1.AgentHarness{harness("codex")},
			a:       attempt("openai", gpt, whatIfOverride(" Codex ")),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "issue: pi is an alias of openclaw",
			hs:      []*v1alpha1.AgentHarness{harness("codex")},
			a:       attempt("openai", gpt, whatIfOverride("pi")),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "issue: codex-app-server is an alias of codex",
			hs:      []*v1alpha1.AgentHarness{harness("codex")},
			a:       attempt("openai", gpt, whatIfOverride("codex-app-server")),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "issue: default means auto, so an override of default overrides nothing",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "openclaw"))},
			a:       attempt("openai", gpt, whatIfOverride("default")),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "issue: an empty runtime id means auto",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			a:       attempt("acme", "m1"),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				if d.RequestedRuntime != "auto" {
					t.Errorf("requestedRuntime = %q", d.RequestedRuntime)
				}
			},
		},
		{
			name:    "issue: provider ids compare case-insensitively in policies",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "openclaw"))},
			a:       attempt(" OpenAI ", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "issue: provider ids compare case-insensitively in support facts",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			a:       attempt("ACME", "m1"),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "issue: an empty provider takes the provider from a provider/model model id",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("anthropic", "openclaw"))},
			a:       attempt("", "anthropic/claude-opus-5"),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "decision: a model id that repeats its provider as prefix names the same model",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model(openaiGPT, "openclaw"))},
			a:       attempt("openai", openaiGPT),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "decision: model ids compare case-insensitively so spelling cannot dodge a model entry",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model(openaiGPT, "openclaw"))},
			a:       attempt("openai", "GPT-5.5"),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
	}
}

func precedenceCases() []selectCase {
	codex := []*v1alpha1.AgentHarness{harness("codex")}
	return []selectCase{
		{
			name:    "rule 1 (OpenClaw selectAgentHarnessDecision: pin ?? override): a locked session's pin beats the session override",
			hs:      codex,
			sess:    session(openaiGPT, locked(), override("openclaw"), pinned("codex")),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "rule 1 (OpenClaw resolveSessionPinnedHarnessId): an unlocked session's pin takes no part: the override decides",
			hs:      codex,
			sess:    session(openaiGPT, override("openclaw"), pinned("codex")),
			a:       &wire.Attempt{},
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "rule 1: the session override beats policy",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{codexPol()},
			sess:    session(openaiGPT, override("openclaw")),
			a:       &wire.Attempt{},
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "rule 1: policy beats auto",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("acme", "openclaw"))},
			a:       attempt("acme", "m1"),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "an agent entry beats an exact model ref",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, agent("main", openaiGPT, "openclaw"), model(openaiGPT, "codex"))},
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "agent entries apply only to their own agent",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, agent("other", openaiGPT, "openclaw"), model(openaiGPT, "codex"))},
			a:       attempt("openai", gpt),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "an exact model ref beats a catalog row",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model(openaiGPT, "openclaw"), prov("openai", "", row{gpt, "codex"}))},
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "a catalog row beats provider/*",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "", row{gpt, "openclaw"}), model("openai/*", "codex"))},
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: a provider/* model entry beats the provider-wide runtime and reports source model",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("openai/*", "openclaw"), prov("openai", "codex"))},
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "the provider-wide runtime applies when nothing more specific matches",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "openclaw", row{"gpt-4.1", "codex"}))},
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "an exact provider/model ref beats a bare model ref",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model(gpt, "codex"), model(openaiGPT, "openclaw"))},
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "a bare model ref matches that model of any provider",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model(gpt, "openclaw"))},
			a:       attempt("azure", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: an exact model entry beats an agent's provider/* entry",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, agent("main", "openai/*", "openclaw"), model(openaiGPT, "codex"))},
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: a catalog row beats an agent's provider/* entry",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, agent("main", "openai/*", "openclaw"), prov("openai", "", row{gpt, "codex"}))},
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: an agent's provider/* entry beats a top-level provider/* entry and reports source model",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, agent("main", "openai/*", "openclaw"), model("openai/*", "codex"))},
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
			check: func(t *testing.T, d wire.Decision) {
				if res := ResolvePolicy([]*v1alpha1.RuntimePolicy{policy("p", 0, agent("main", "openai/*", "openclaw"))},
					PolicyKey{AgentID: "main", Provider: "openai", Model: gpt}); res.Source != v1alpha1.PolicySourceAgent {
					t.Errorf("policy source = %q, want agent", res.Source)
				}
			},
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: a provider/* entry matches an empty caller provider and the turn takes the entry's provider",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("acme/*", "h1"))},
			a:       attempt("", "m1"),
			runtime: "h1", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
			check: wantCand("h1", true, ""),
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: an agent's provider/* entry matches an empty caller provider",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, agent("main", "acme/*", "h1"))},
			a:       attempt("", "m1"),
			runtime: "h1", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: provider/* entries of two providers are ambiguous for an empty caller provider",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("acme/*", "h1"), model("other/*", "openclaw"))},
			a:       attempt("", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name: "issue: a bare model id matching entries of two providers when the provider is unknown yields no model-scoped policy",
			hs:   codex,
			ps: []*v1alpha1.RuntimePolicy{
				policy("p1", 0, model(openaiGPT, "codex")),
				policy("p2", 1, model("azure/"+gpt, "openclaw")),
			},
			a:       attempt("", gpt),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				if d.RequestedRuntime != "auto" || len(d.MatchedPolicies) != 0 {
					t.Errorf("requested %q matched %v", d.RequestedRuntime, d.MatchedPolicies)
				}
			},
		},
		{
			name:    "issue: a bare model id matching one provider's entry keeps its model-scoped policy",
			ps:      []*v1alpha1.RuntimePolicy{policy("p1", 0, model(openaiGPT, "openclaw"))},
			a:       attempt("", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: catalog rows are never consulted for an unknown provider",
			ps:      []*v1alpha1.RuntimePolicy{policy("p1", 0, prov("openai", "", row{gpt, "codex"}), prov("azure", "", row{gpt, "openclaw"}))},
			a:       attempt("", gpt),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "OpenClaw model-runtime-policy test (prefers an agent-specific model entry over a conflicting defaults entry): the agent's entry decides",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("other/m1", "openclaw"), agent("main", "acme/m1", "h1"))},
			a:       attempt("", "m1"),
			runtime: "h1", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
			check: wantCand("h1", true, ""), // h1 supports provider acme only: the turn took the entry's provider
		},
		{
			name:    "OpenClaw model-runtime-policy test (fails closed for duplicate provider-prefixed bare-model policies): no policy at all, no fall-through to provider/*",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("acme/m1", "h1"), model("other/m1", "openclaw"), model("acme/*", "h1"))},
			a:       attempt("", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				if d.RequestedRuntime != "auto" || len(d.MatchedPolicies) != 0 {
					t.Errorf("requested %q matched %v, want auto and no policy", d.RequestedRuntime, d.MatchedPolicies)
				}
			},
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: a bare entry beside a provider-prefixed one is ambiguous for an unknown provider",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("m1", "openclaw"), model("acme/m1", "h1"))},
			a:       attempt("", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				if d.RequestedRuntime != "auto" || len(d.MatchedPolicies) != 0 {
					t.Errorf("requested %q matched %v, want auto and no policy", d.RequestedRuntime, d.MatchedPolicies)
				}
			},
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: an ambiguous agent is not rescued by the top-level entries",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, agent("main", "acme/m1", "h1"), agent("main", "other/m1", "openclaw"), model("acme/m1", "openclaw"))},
			a:       attempt("", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				if d.RequestedRuntime != "auto" || len(d.MatchedPolicies) != 0 {
					t.Errorf("requested %q matched %v, want auto and no policy", d.RequestedRuntime, d.MatchedPolicies)
				}
			},
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: provider/* entries are searched per kind: the agent's beats a top-level one of another provider",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, agent("main", "acme/*", "h1"), model("other/*", "openclaw"))},
			a:       attempt("", "m1"),
			runtime: "h1", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
			check: wantCand("h1", true, ""), // h1 supports provider acme only: the turn took the entry's provider
		},
		{
			name:    "OpenClaw model-runtime-policy test (matches a provider-prefixed agent model entry when the caller provider is empty): reports the entry's provider",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("acme/m1[1m]", "h1"))},
			a:       attempt("", "m1[1m]"),
			runtime: "h1", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
			check: wantCand("h1", true, ""), // h1 supports provider acme only: the turn took the entry's provider
		},
		{
			name:    "OpenClaw resolveModelRuntimePolicy: a lone catalog row is not consulted for an unknown provider either",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("acme", "", row{"m1", "openclaw"}))},
			a:       attempt("", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				if d.RequestedRuntime != "auto" || len(d.MatchedPolicies) != 0 {
					t.Errorf("requested %q matched %v, want auto and no policy", d.RequestedRuntime, d.MatchedPolicies)
				}
			},
		},
		{
			name:    "OpenClaw model-runtime-policy test (still rejects provider-prefixed entries whose provider disagrees with a non-empty caller provider)",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("openrouter/m1", "openclaw"))},
			a:       attempt("acme", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				if d.RequestedRuntime != "auto" || len(d.MatchedPolicies) != 0 {
					t.Errorf("requested %q matched %v, want auto and no policy", d.RequestedRuntime, d.MatchedPolicies)
				}
			},
		},
		{
			name:    "OpenClaw model-runtime-policy test (honors provider wildcard agent model entries without a concrete model id)",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("acme/*", "openclaw"))},
			a:       attempt("acme", ""),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name: "seed: Model-scoped runtime policy takes precedence (over another policy's provider entry)",
			hs:   codex,
			ps: []*v1alpha1.RuntimePolicy{
				policy("old", 0, prov("openai", "openclaw")),
				policy("new", 1, model(openaiGPT, "codex")),
			},
			a:       attempt("openai", gpt),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
			check: wantMatched("new", "old"),
		},
		{
			name:    "seed: Provider-scoped runtime policy is next in priority",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{codexPol()},
			a:       attempt("openai", gpt),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "a policy entry of auto asks the harnesses and keeps the policy as runtime source",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("acme", "auto"))},
			a:       attempt("acme", "m1"),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name: "two policies giving one key different runtimes: the older policy wins",
			hs:   codex,
			ps: []*v1alpha1.RuntimePolicy{
				policy("new", 2, prov("openai", "openclaw")),
				policy("old", 1, prov("openai", "codex")),
			},
			a:       attempt("openai", gpt),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: wantMatched("old", "new"),
		},
		{
			name: "with equal creationTimestamps the name breaks the tie",
			hs:   codex,
			ps: []*v1alpha1.RuntimePolicy{
				policy("b", 0, prov("openai", "codex")),
				policy("a", 0, prov("openai", "openclaw")),
			},
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceProvider,
			check: wantMatched("a", "b"),
		},
		{
			name: "a Deny policy enforces over an older policy's more specific entry",
			hs:   codex,
			ps: []*v1alpha1.RuntimePolicy{
				policy("old", 0, model(openaiGPT, "openclaw")),
				policy("enforcer", 5, prov("openai", "codex"), deny()),
			},
			a:       attempt("openai", gpt),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: wantMatched("enforcer", "old"),
		},
		{
			name: "between two Deny policies the older wins",
			hs:   codex,
			ps: []*v1alpha1.RuntimePolicy{
				policy("d2", 2, prov("openai", "openclaw"), deny()),
				policy("d1", 1, prov("openai", "codex"), deny()),
			},
			a:       attempt("openai", gpt),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: wantMatched("d1", "d2"),
		},
		{
			name: "a Deny policy governs only the providers it names",
			hs:   codex,
			ps: []*v1alpha1.RuntimePolicy{
				policy("d", 0, prov("anthropic", "openclaw"), deny()),
				policy("p", 1, prov("openai", "codex")),
			},
			sess:    session(openaiGPT, override("openclaw")),
			a:       &wire.Attempt{},
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "a Deny policy's agent entry governs only that agent",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("d", 0, agent("other", "openai/*", "codex"), deny())},
			sess:    session(openaiGPT, override("openclaw")),
			a:       &wire.Attempt{},
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name: "matchedPolicies lists the deciding policy first, then the others oldest first",
			hs:   codex,
			ps: []*v1alpha1.RuntimePolicy{
				policy("p3", 3, model(openaiGPT, "codex")),
				policy("p2", 2, prov("openai", "openclaw")),
				policy("unrelated", 0, prov("anthropic", "openclaw")),
				policy("p1", 1, prov("openai", "openclaw")),
			},
			a:       attempt("openai", gpt),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceModel,
			check: wantMatched("p3", "p1", "p2"),
		},
	}
}

func denyCases() []selectCase {
	codex := []*v1alpha1.AgentHarness{harness("codex")}
	sample := harness("codex", label("Codex"), noStatus())
	sampleSession := func(opts ...sopt) *v1alpha1.AgentSession {
		s := session(openaiGPT, opts...)
		s.Spec.SessionKey, s.Spec.SessionID = "agent:main:demo", "3f6d2a9e-5b1c-4e8a-9d07-2c41b8e6f5a0"
		return s
	}
	sampleAttempt := func() *wire.Attempt {
		return &wire.Attempt{AgentID: "main", SessionKey: "agent:main:demo", SessionID: "3f6d2a9e-5b1c-4e8a-9d07-2c41b8e6f5a0", Provider: "openai", ModelID: gpt}
	}
	return []selectCase{
		{
			name: "rule 1: under a Deny policy a contradicting override fails closed",
			hs:   codex,
			ps:   []*v1alpha1.RuntimePolicy{codexOnly()},
			sess: session(openaiGPT, override("openclaw")),
			a:    &wire.Attempt{},
			code: wire.CodeOverrideDenied, source: v1alpha1.RuntimeSourceOverride,
			msg: `Runtime override "openclaw" contradicts RuntimePolicy "codex-only" (sessionOverrides: Deny), which requires runtime "codex" for openai/gpt-5.5. Remove spec.runtimeOverride or set it to "codex".`,
		},
		{
			name: "rule 1: a locked session's pin contradicting a Deny policy fails closed, naming the remedies that work",
			hs:   []*v1alpha1.AgentHarness{harness("codex"), harness("other")},
			ps:   []*v1alpha1.RuntimePolicy{codexOnly()},
			sess: session(openaiGPT, locked(), pinned("other")),
			a:    &wire.Attempt{},
			code: wire.CodeOverrideDenied, source: v1alpha1.RuntimeSourceSession,
			msg: `Session is pinned to agent harness "other" (its model selection is locked), but RuntimePolicy "codex-only" (sessionOverrides: Deny) requires runtime "codex" for openai/gpt-5.5. ` +
				`Reset the session (bump spec.resetGeneration; it clears the pin and the native thread), or unlock its model selection.`,
		},
		{
			name: "rule 1: with route facts a locked session's pin still takes part, so a contradicting pin is still denied under Deny",
			hs:   []*v1alpha1.AgentHarness{harness("codex"), harness("other")},
			ps:   []*v1alpha1.RuntimePolicy{codexOnly()},
			sess: session(openaiGPT, locked(), pinned("other")),
			a:    attempt("", "", withRoute(codexRoute())),
			code: wire.CodeOverrideDenied, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "seed: configured runtime policy remains authoritative: an unlocked session's contradicting pin is no denial under Deny",
			hs:      []*v1alpha1.AgentHarness{harness("codex"), harness("other")},
			ps:      []*v1alpha1.RuntimePolicy{codexOnly()},
			sess:    session(openaiGPT, pinned("other")),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "rule 1: a reset (resetGeneration past the binding's generation) makes the pin stale: no denial, no pin",
			hs:      []*v1alpha1.AgentHarness{harness("codex"), harness("other")},
			ps:      []*v1alpha1.RuntimePolicy{codexOnly()},
			sess:    session(openaiGPT, locked(), pinned("other"), boundAt(0), resetTo(1)),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "an override that agrees with a Deny policy runs",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{codexOnly()},
			sess:    session(openaiGPT, override("codex")),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "a locked session's pin that agrees with a Deny policy runs",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{codexOnly()},
			sess:    session(openaiGPT, locked(), pinned("codex")),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "decision: an override of auto under a Deny policy overrides nothing",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{codexOnly()},
			sess:    session(openaiGPT, override("auto")),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "decision: under an enforced auto a pin that auto would select itself is kept",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:      []*v1alpha1.RuntimePolicy{policy("d", 0, prov("acme", "auto"), deny())},
			sess:    session("acme/m1", locked(), pinned("h1")),
			a:       &wire.Attempt{},
			runtime: "h1", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "decision: under an enforced auto a codex pin (auto's own choice on the official route) is kept while route facts are pending",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("d", 0, prov("openai", "auto"), deny())},
			sess:    session(openaiGPT, locked(), pinned("codex")),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "seed + OpenClaw resolveSessionPinnedHarnessId: a locked session's agentHarnessId keeps ownership while route preparation is pending (policy changed to openclaw)",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "openclaw"))},
			sess:    session(openaiGPT, locked(), pinned("codex")),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
			check: wantCand("codex", true, reasonPinUnchecked),
		},
		{
			name:    "OpenClaw selection test (pinned harness with prepared routes): a locked session's pin that supports the route runs on it with facts too (policy changed to openclaw)",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "openclaw"))},
			sess:    session(openaiGPT, locked(), pinned("codex")),
			a:       attempt("", "", withRoute(codexRoute())),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name: "OpenClaw selection test (fails closed when a session-pinned Codex harness is unavailable): a locked pin no visible harness has",
			hs:   codex,
			sess: session(openaiGPT, locked(), pinned("ghost")),
			a:    &wire.Attempt{},
			code: wire.CodeHarnessNotRegistered, source: v1alpha1.RuntimeSourceSession,
			msg: `Requested agent harness "ghost" is not registered.`,
		},
		{
			name: "OpenClaw selection test (validates a session-pinned harness against a finalized route with undeclared compatibility)",
			hs:   codex,
			sess: session(openaiGPT, locked(), pinned("codex")),
			a:    attempt("", "", withRoute(rt("openai-completions", "https://api.openai.com/v1"))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name: "OpenClaw selection test (validates a session-pinned harness against prepared auth): a subscription the route has no profile for",
			hs:   codex,
			sess: session(openaiGPT, locked(), pinned("codex")),
			a:    attempt("", "", withRoute(codexRoute(auth(wire.AuthSourceNone, "", wire.AuthRequirementSubscription)))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "OpenClaw model-runtime-policy test (OpenRouter agent model policy for a provider-owned model id): a nested model id matches its provider's entry",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("openrouter/anthropic/claude-opus-4.6", "openclaw"))},
			a:       attempt("openrouter", "anthropic/claude-opus-4.6"),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name:    "OpenClaw model-runtime-policy test (OpenRouter provider model policy): a catalog row with a nested model id",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openrouter", "", row{"anthropic/claude-opus-4.6", "openclaw"}))},
			a:       attempt("openrouter", "anthropic/claude-opus-4.6"),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
		},
		{
			name: "OpenClaw selection test (fails closed when a pinned harness cannot own every prepared route): a locked pin refused by a route without fallback",
			hs:   codex,
			ps:   []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "openclaw"))},
			sess: session(openaiGPT, locked(), pinned("codex")),
			a:    attempt("", "", withRoute(rt(apiPlatform, "https://proxy.example/v1", compat("openclaw")))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "OpenClaw selection test (uses a declared fallback for a pinned harness across prepared routes): a locked pin falls back where Codex declared it",
			hs:      codex,
			sess:    session(openaiGPT, locked(), pinned("codex")),
			a:       attempt("", "", withRetrySet(codexRoute(), codexRoute(overrides()))),
			runtime: "openclaw", reason: wire.ReasonPluginDeclaredFallbackOpenClaw, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "seed: configured runtime policy remains authoritative: an unlocked session's pin takes no part (policy changed to openclaw)",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "openclaw"))},
			sess:    session(openaiGPT, pinned("codex")),
			a:       &wire.Attempt{},
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name: "decision: under an enforced auto a pin that auto would not select is OverrideDenied",
			hs:   []*v1alpha1.AgentHarness{acme("h1", 5), acme("h2", 9)},
			ps:   []*v1alpha1.RuntimePolicy{policy("d", 0, prov("acme", "auto"), deny())},
			sess: session("acme/m1", locked(), pinned("h1")),
			a:    &wire.Attempt{},
			code: wire.CodeOverrideDenied, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name: "decision: a contradicting override fails closed even when the pin agrees",
			hs:   codex,
			ps:   []*v1alpha1.RuntimePolicy{codexOnly()},
			sess: session(openaiGPT, locked(), pinned("codex"), override("openclaw")),
			a:    &wire.Attempt{},
			code: wire.CodeOverrideDenied, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name: "a CLI backend override contradicting a Deny policy is OverrideDenied",
			ps:   []*v1alpha1.RuntimePolicy{policy("d", 0, prov("anthropic", "openclaw"), deny())},
			sess: session("anthropic/claude-opus-5", override("claude-cli")),
			a:    &wire.Attempt{},
			code: wire.CodeOverrideDenied, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name: "rule 1: a what-if override contradicting a Deny policy is OverrideDenied",
			hs:   codex,
			ps:   []*v1alpha1.RuntimePolicy{codexOnly()},
			a:    attempt("openai", gpt, whatIfOverride("openclaw")),
			code: wire.CodeOverrideDenied, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:        "Done-when: the codex-only sample selects codex for an openai attempt",
			hs:          []*v1alpha1.AgentHarness{sample},
			ps:          []*v1alpha1.RuntimePolicy{codexOnly()},
			sess:        sampleSession(),
			assumeReady: true,
			a:           sampleAttempt(),
			runtime:     "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: all(wantRef("agents", "codex"), wantMatched("codex-only"), wantTools(false)),
		},
		{
			name:        "Done-when: the codex-only sample with a session override to openclaw fails closed with OverrideDenied",
			hs:          []*v1alpha1.AgentHarness{sample},
			ps:          []*v1alpha1.RuntimePolicy{codexOnly()},
			sess:        sampleSession(override("openclaw")),
			assumeReady: true,
			a:           sampleAttempt(),
			code:        wire.CodeOverrideDenied, source: v1alpha1.RuntimeSourceOverride,
		},
	}
}

func autoCases() []selectCase {
	return []selectCase{
		{
			name:    "seed: auto asks registered harnesses whether they support the resolved effective route",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			a:       attempt("acme", "m1"),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
			check: all(wantRef("agents", "h1"), wantCand("h1", true, "")),
		},
		{
			name:    "seed: If no registered harness matches, OpenClaw falls back to its embedded runtime",
			hs:      []*v1alpha1.AgentHarness{harness("codex")},
			a:       attempt("acme", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("codex", false, reasonProvider),
		},
		{
			name:    "rule 2: the highest priority wins",
			hs:      []*v1alpha1.AgentHarness{acme("a", 1), acme("b", 50), acme("c", 10)},
			a:       attempt("acme", "m1"),
			runtime: "b", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name: "rule 2: a missing priority counts as 0",
			hs: []*v1alpha1.AgentHarness{
				harness("a", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyAny})),
				acme("b", -1),
			},
			a:       attempt("acme", "m1"),
			runtime: "a", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "rule 2: priority ties go to the lower harness id",
			hs:      []*v1alpha1.AgentHarness{acme("zeta", 5), acme("alpha", 5)},
			a:       attempt("acme", "m1"),
			runtime: "alpha", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "issue: an ExplicitOnly harness is a candidate with reason harness is explicit-only",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 100, autoSel(v1alpha1.AutoSelectionExplicitOnly)), acme("h2", 1)},
			a:       attempt("acme", "m1"),
			runtime: "h2", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("h1", false, "harness is explicit-only"),
		},
		{
			name:    "autoSelection is separate from support: an ExplicitOnly harness serves an explicit runtime id",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5, autoSel(v1alpha1.AutoSelectionExplicitOnly))},
			a:       attempt("acme", "m1", whatIfOverride("h1")),
			runtime: "h1", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceOverride,
			check: wantCand("h1", true, ""),
		},
		{
			name:    "issue: a Listed harness without the provider is a candidate with reason provider is not auto-selectable",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 100, autoSel(v1alpha1.AutoSelectionListed, "other"))},
			a:       attempt("acme", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("h1", false, "provider is not auto-selectable"),
		},
		{
			name:    "issue: a Listed harness is asked about its listed providers",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 100, autoSel(v1alpha1.AutoSelectionListed, "acme"))},
			a:       attempt("acme", "m1"),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "issue: an AllProviders harness is asked about every provider",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 100, autoSel(v1alpha1.AutoSelectionAllProviders))},
			a:       attempt("acme", "m1"),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "issue: every visible harness appears among the candidates with its result, by priority then id",
			hs:      []*v1alpha1.AgentHarness{acme("a", 1), acme("b", 2, autoSel(v1alpha1.AutoSelectionExplicitOnly)), harness("codex"), acme("c", 1)},
			a:       attempt("acme", "m1"),
			runtime: "a", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				var got []string
				for _, c := range d.Candidates {
					got = append(got, c.HarnessID+":"+boolStr(c.Supported)+":"+c.Reason)
				}
				want := []string{"codex:false:" + reasonProvider, "b:false:harness is explicit-only", "a:true:", "c:true:"}
				if !slices.Equal(got, want) {
					t.Errorf("candidates = %v, want %v", got, want)
				}
				if c := cand(t, d, "codex"); c.Priority != 100 || c.Label != "codex" {
					t.Errorf("codex candidate = %+v", c)
				}
			},
		},
		{
			name:    "seed: Provider/model prefixes alone never select a harness",
			hs:      []*v1alpha1.AgentHarness{harness("acme", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"other"}, RoutePolicy: v1alpha1.RoutePolicyAny}))},
			a:       attempt("", "acme/m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "seed: Provider/model prefixes alone never select a harness: a what-if model id's prefix is no provider harnesses are asked about",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			a:       attempt("", "acme/m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("h1", false, reasonProvider),
		},
		{
			name:    "OpenClaw selection test (does not select Codex from a non-OpenAI model name): a model name never selects",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			a:       attempt("custom", "acme-m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("h1", false, reasonProvider),
		},
		{
			name:    "OpenClaw selection test (does not infer native support for an indeterminate route): without route facts auto does not select a route-bound harness by the provider's name",
			hs:      []*v1alpha1.AgentHarness{harness("h1", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyMustListHarness}))},
			a:       attempt("acme", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("h1", false, reasonRouteIndeterminate),
		},
		{
			name:    "OpenClaw selection test (auto-selects plugin support by default): a provider native to the harness is claimed without route facts",
			hs:      []*v1alpha1.AgentHarness{harness("h1", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyMustListHarness, NativeProviders: []v1alpha1.ProviderID{"acme"}}))},
			a:       attempt("acme", "m1"),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "a route-bound harness is selected once the route facts list it",
			hs:      []*v1alpha1.AgentHarness{harness("h1", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyMustListHarness}))},
			a:       attempt("acme", "m1", withRoute(rt("acme-api", "https://acme.example/v1", compat("h1")))),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name: "seed: in auto mode embedded fallback applies only when no registered plugin harness supports the provider/model",
			hs: []*v1alpha1.AgentHarness{
				harness("big", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"other"}, Priority: ptr.To[int32](900), RoutePolicy: v1alpha1.RoutePolicyAny})),
				acme("small", 1),
			},
			a:       attempt("acme", "m1"),
			runtime: "small", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name: "rule 3: an unavailable auto winner is HarnessUnavailable, never a fallback",
			hs: []*v1alpha1.AgentHarness{
				acme("h1", 5, withCond(v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse, "NoReadyPods", "0/1 server pods are Ready")),
				acme("h2", 1),
			},
			a:    attempt("acme", "m1"),
			code: wire.CodeHarnessUnavailable, source: v1alpha1.RuntimeSourceImplicit,
			msg: `Agent harness "h1" is unavailable: WorkloadReady is False (NoReadyPods: 0/1 server pods are Ready). Retry later.`,
			check: func(t *testing.T, d wire.Decision) {
				if d.HarnessID != "h1" {
					t.Errorf("harnessId = %q", d.HarnessID)
				}
			},
		},
		{
			name: "rule 3: an auto winner below the version floor fails closed",
			hs:   []*v1alpha1.AgentHarness{acme("h1", 5, belowFloorCond("codex-cli 0.140.0 is below the version floor 0.149.0"))},
			a:    attempt("acme", "m1"),
			code: wire.CodeVersionBelowFloor, source: v1alpha1.RuntimeSourceImplicit,
			msg: "codex-cli 0.140.0 is below the version floor 0.149.0",
		},
		{
			name:    "an omitted support block means the adapter defaults (codex: providers codex, openai; priority 100)",
			hs:      []*v1alpha1.AgentHarness{harness("pool")},
			a:       attempt("acme", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				if c := cand(t, d, "pool"); c.Supported || c.Reason != reasonProvider || c.Priority != 100 {
					t.Errorf("candidate = %+v", c)
				}
			},
		},
		{
			name:    "decision: an unknown autoSelection mode keeps the harness out of auto",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5, autoSel("Sometimes"))},
			a:       attempt("acme", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("h1", false, reasonUnknownAutoMode),
		},
		{
			name: "harness ids are unique among visible harnesses: of two with one id the older counts",
			hs: []*v1alpha1.AgentHarness{
				acme("h1", 5, objName("team-b", "h1"), created(2)),
				acme("h1", 5, objName("team-a", "h1-old"), created(1)),
			},
			a:       attempt("acme", "m1"),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
			check: func(t *testing.T, d wire.Decision) {
				wantRef("team-a", "h1-old")(t, d)
				if d.Candidates[1].HarnessRef.Name != "h1" || d.Candidates[1].Reason != reasonShadowed {
					t.Errorf("shadowed candidate = %+v", d.Candidates[1])
				}
			},
		},
		{
			name:    "openclaw and its aliases are reserved: a harness using one is never selected by auto",
			hs:      []*v1alpha1.AgentHarness{harness("pi", written(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyAny}))},
			a:       attempt("acme", "m1"),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("pi", false, reasonReserved),
		},
		{
			name: "a harness whose id is the alias codex-app-server does not register codex",
			hs:   []*v1alpha1.AgentHarness{harness("codex-app-server")},
			a:    attempt("openai", gpt, whatIfOverride("codex")),
			code: wire.CodeHarnessNotRegistered, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "omitted support providers mean any provider",
			hs:      []*v1alpha1.AgentHarness{harness("any", written(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyAny}))},
			a:       attempt("acme", "m1"),
			runtime: "any", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "seed: auto checks the route facts: a route policy listing the harness is supported",
			hs:      []*v1alpha1.AgentHarness{harness("h1", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyMustListHarness}))},
			a:       attempt("acme", "m1", withRoute(acmeRoute(compat("h1")))),
			runtime: "h1", reason: wire.ReasonAutoPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "seed: An absent policy means the provider did not declare route-level compatibility; it is not permission (auto)",
			hs:      []*v1alpha1.AgentHarness{harness("h1", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyMustListHarness}))},
			a:       attempt("acme", "m1", withRoute(acmeRoute())),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("h1", false, reasonRouteUndeclared),
		},
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func implicitCases() []selectCase {
	codex := []*v1alpha1.AgentHarness{harness("codex")}
	official := func(api, url string) selectCase {
		return selectCase{
			name:    "issue: implicit codex on the official route " + api + " " + url,
			hs:      codex,
			a:       attempt("openai", gpt, withRoute(rt(api, url, compat("codex")))),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceImplicit,
		}
	}
	notOfficial := func(name, api, url string, opts ...ropt) selectCase {
		return selectCase{
			name:    name + " (" + api + " " + url + ")",
			hs:      codex,
			a:       attempt("openai", gpt, withRoute(rt(api, url, append([]ropt{compat("codex")}, opts...)...))),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		}
	}
	return []selectCase{
		{
			name:    "seed: The openai/* prefix alone never selects Codex (no route facts, no pin: openclaw)",
			hs:      codex,
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("codex", false, reasonNoRouteFacts),
		},
		{
			name:    "rule 2: an openai attempt on the official route with codex compatible is implicit codex",
			hs:      codex,
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceImplicit,
			check: wantRef("agents", "codex"),
		},
		{
			name:    "rule 2: explicit runtimes treat an attempt without route facts as the default official route",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{codexPol()},
			a:       attempt("openai", gpt),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		official(apiPlatform, "https://api.openai.com"),
		official(apiPlatform, "https://api.openai.com/"),
		official(apiPlatform, "https://api.openai.com/v1"),
		official(apiPlatform, "https://api.openai.com/v1/"),
		official(apiChatGPT, "https://chatgpt.com/backend-api"),
		official(apiChatGPT, "https://chatgpt.com/backend-api/"),
		official(apiChatGPT, "https://chatgpt.com/backend-api/codex"),
		official(apiChatGPT, "https://chatgpt.com/backend-api/codex/"),
		official(apiChatGPT, "https://chatgpt.com/backend-api/v1"),
		official(apiChatGPT, "https://chatgpt.com/backend-api/responses/"),
		official(apiChatGPT, "https://chatgpt.com/backend-api/codex/v1/"),
		official(apiChatGPT, "https://chatgpt.com/backend-api/codex/responses"),
		official(apiPlatform, "HTTPS://API.OpenAI.com/v1"),
		notOfficial("issue: an official route with a port is not official", apiPlatform, "https://api.openai.com:443/v1"),
		notOfficial("issue: an official route with another port is not official", apiChatGPT, "https://chatgpt.com:8443/backend-api/codex"),
		notOfficial("issue: an official route with a query is not official", apiPlatform, "https://api.openai.com/v1?x=1"),
		notOfficial("issue: an official route with an empty query is not official", apiPlatform, "https://api.openai.com/v1?"),
		notOfficial("issue: an official route with a fragment is not official", apiPlatform, "https://api.openai.com/v1#f"),
		notOfficial("seed: Plaintext official HTTP endpoints are rejected", apiPlatform, "http://api.openai.com/v1"),
		notOfficial("seed: Plaintext official HTTP endpoints are rejected (ChatGPT)", apiChatGPT, "http://chatgpt.com/backend-api/codex"),
		notOfficial("seed: Custom endpoints stay on OpenClaw (another host)", apiPlatform, "https://api.openai.com.evil.example/v1"),
		notOfficial("seed: Custom endpoints stay on OpenClaw (host in the path)", apiPlatform, "https://proxy.example/api.openai.com/v1"),
		notOfficial("seed: Custom endpoints stay on OpenClaw (trailing dot host)", apiPlatform, "https://api.openai.com./v1"),
		notOfficial("seed: Custom endpoints stay on OpenClaw (user info)", apiPlatform, "https://user@api.openai.com/v1"),
		notOfficial("issue: a trailing path after /v1 is not official", apiPlatform, "https://api.openai.com/v1/responses"),
		notOfficial("issue: another version path is not official", apiPlatform, "https://api.openai.com/v2"),
		notOfficial("issue: a doubled slash is not official", apiPlatform, "https://api.openai.com//v1"),
		notOfficial("decision: a percent-escaped path is not official", apiPlatform, "https://api.openai.com/v%31"),
		notOfficial("issue: a trailing path after the ChatGPT route is not official", apiChatGPT, "https://chatgpt.com/backend-api/codex/v1/extra"),
		notOfficial("issue: a ChatGPT path must be whole segments", apiChatGPT, "https://chatgpt.com/backend-apix"),
		notOfficial("issue: ChatGPT route segments come in order", apiChatGPT, "https://chatgpt.com/backend-api/v1/codex"),
		notOfficial("issue: the ChatGPT codex segment appears once", apiChatGPT, "https://chatgpt.com/backend-api/codex/codex"),
		notOfficial("issue: the ChatGPT host with the Platform api is not official", apiPlatform, "https://chatgpt.com/backend-api/codex"),
		notOfficial("issue: the Platform host with the ChatGPT api is not official", apiChatGPT, "https://api.openai.com/v1"),
		notOfficial("seed: Completions adapters stay on OpenClaw", "openai-completions", "https://api.openai.com/v1"),
		notOfficial("seed: authored request behavior stays on OpenClaw", apiPlatform, platformURL, overrides()),
		{
			name:    "decision: an unknown requestTransportOverrides fact is not an official route",
			hs:      codex,
			a:       attempt("openai", gpt, withRoute(wire.ModelProvider{API: apiPlatform, BaseURL: platformURL, RuntimePolicy: &wire.RouteRuntimePolicy{CompatibleIDs: []string{"codex"}}})),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "issue: implicit codex that is not registered falls back to openclaw",
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "openclaw", reason: wire.ReasonImplicitPluginUnavailableOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "issue: implicit codex that does not support the route falls back to openclaw",
			hs:      []*v1alpha1.AgentHarness{harness("codex", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"codex"}}))},
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "openclaw", reason: wire.ReasonImplicitPluginUnsupportedOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "seed: OpenAI may select Codex only when its route contract declares codex compatible",
			hs:      codex,
			a:       attempt("openai", gpt, withRoute(rt(apiPlatform, platformURL))),
			runtime: "openclaw", reason: wire.ReasonImplicitPluginUnsupportedOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("codex", false, reasonRouteUndeclared),
		},
		{
			name: "rule 3: implicit codex below the floor fails closed: a claimed route never degrades",
			hs:   []*v1alpha1.AgentHarness{harness("codex", belowFloorCond("codex 0.148.2 is older than 0.149.0"))},
			a:    attempt("openai", gpt, withRoute(codexRoute())),
			code: wire.CodeVersionBelowFloor, source: v1alpha1.RuntimeSourceImplicit,
			msg: "codex 0.148.2 is older than 0.149.0",
		},
		{
			name: "rule 3: implicit codex that is unavailable is HarnessUnavailable, never a fallback",
			hs:   []*v1alpha1.AgentHarness{harness("codex", withCond(v1alpha1.HarnessConditionVersionSupported, metav1.ConditionUnknown, "HandshakePending", ""))},
			a:    attempt("openai", gpt, withRoute(codexRoute())),
			code: wire.CodeHarnessUnavailable, source: v1alpha1.RuntimeSourceImplicit,
			msg: `Agent harness "codex" is unavailable: VersionSupported is Unknown (HandshakePending). Retry later.`,
		},
		{
			name: "issue: for provider openai auto asks no plugin besides implicit codex",
			hs: []*v1alpha1.AgentHarness{
				harness("codex"),
				harness("big", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"openai"}, Priority: ptr.To[int32](900), RoutePolicy: v1alpha1.RoutePolicyAny})),
			},
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("big", false, reasonOpenAIImplicit),
		},
		{
			name:    "issue: for provider openai auto asks no plugin even when codex is not registered",
			hs:      []*v1alpha1.AgentHarness{harness("big", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"openai"}, RoutePolicy: v1alpha1.RoutePolicyAny}))},
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "openclaw", reason: wire.ReasonImplicitPluginUnavailableOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "decision: implicit codex respects autoSelection ExplicitOnly",
			hs:      []*v1alpha1.AgentHarness{harness("codex", autoSel(v1alpha1.AutoSelectionExplicitOnly))},
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "openclaw", reason: wire.ReasonImplicitPluginUnsupportedOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantCand("codex", false, reasonExplicitOnly),
		},
		{
			name:    "implicit Codex means the harness whose harnessId is codex, not any codex-app-server harness",
			hs:      []*v1alpha1.AgentHarness{harness("codex-pool")},
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "openclaw", reason: wire.ReasonImplicitPluginUnavailableOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "rule 2: implicit codex selected under a policy entry of auto has runtime source implicit",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "auto"))},
			a:       attempt("openai", gpt, withRoute(codexRoute())),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "rule 2: a custom openai endpoint under a policy entry of auto keeps the policy's runtime source",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "auto"))},
			a:       attempt("openai", gpt, withRoute(rt(apiPlatform, "https://proxy.example/v1", compat("codex")))),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "issue: implicit codex is checked against prepared auth too",
			hs:      codex,
			a:       attempt("openai", gpt, withRoute(codexRoute(auth(wire.AuthSourceDirect, "api-key", wire.AuthRequirementSubscription)))),
			runtime: "openclaw", reason: wire.ReasonImplicitPluginUnsupportedOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
	}
}

func explicitCases() []selectCase {
	codex := []*v1alpha1.AgentHarness{harness("codex")}
	pol := []*v1alpha1.RuntimePolicy{codexPol()}
	unavailable := func(name string, opt hopt, msg string) selectCase {
		return selectCase{
			name: name,
			hs:   []*v1alpha1.AgentHarness{harness("codex", opt)},
			ps:   pol,
			a:    attempt("openai", gpt),
			code: wire.CodeHarnessUnavailable, source: v1alpha1.RuntimeSourceProvider, msg: msg,
		}
	}
	return []selectCase{
		{
			name: "issue: an explicit harness that is not registered fails closed with the exact text",
			ps:   []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "ghost"))},
			a:    attempt("openai", gpt),
			code: wire.CodeHarnessNotRegistered, source: v1alpha1.RuntimeSourceProvider,
			msg: `Requested agent harness "ghost" is not registered.`,
			check: func(t *testing.T, d wire.Decision) {
				if d.HarnessID != "ghost" || d.HarnessRef != nil || d.RequestedRuntime != "ghost" {
					t.Errorf("harnessId %q ref %v requested %q", d.HarnessID, d.HarnessRef, d.RequestedRuntime)
				}
			},
		},
		{
			name: "seed: Explicit plugin runtimes fail closed (Codex-only without a codex harness)",
			hs:   []*v1alpha1.AgentHarness{harness("codex-pool")},
			ps:   []*v1alpha1.RuntimePolicy{codexOnly()},
			a:    attempt("openai", gpt),
			code: wire.CodeHarnessNotRegistered, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name: "issue: an unsupported explicit harness fails closed with the exact text and reason",
			hs:   []*v1alpha1.AgentHarness{acme("h1", 5)},
			ps:   []*v1alpha1.RuntimePolicy{policy("p", 0, prov("other", "h1"))},
			a:    attempt("other", "m1"),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
			msg:   `Requested agent harness "h1" does not support other/m1 (provider is not supported).`,
			check: wantRef("agents", "h1"),
		},
		{
			name: "issue: without a model the unsupported text names just the provider",
			hs:   []*v1alpha1.AgentHarness{acme("h1", 5)},
			a:    attempt("other", "", whatIfOverride("h1")),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceOverride,
			msg: `Requested agent harness "h1" does not support other (provider is not supported).`,
		},
		{
			name:    "issue: an unsupported explicit harness that declared the lossless fallback runs on openclaw",
			hs:      codex,
			ps:      pol,
			a:       attempt("openai", gpt, withRoute(codexRoute(overrides()))),
			runtime: "openclaw", reason: wire.ReasonPluginDeclaredFallbackOpenClaw, source: v1alpha1.RuntimeSourceProvider,
			check: func(t *testing.T, d wire.Decision) {
				if c := cand(t, d, "codex"); c.FallbackRuntime != "openclaw" || c.Reason != reasonTransportOverrides {
					t.Errorf("candidate = %+v", c)
				}
				if d.ToolPolicy != nil {
					t.Errorf("toolPolicy on an embedded outcome: %+v", d.ToolPolicy)
				}
			},
		},
		{
			name: "seed: Leave fallbackRuntime absent for route failures that must remain fail-closed",
			hs:   codex,
			ps:   pol,
			a:    attempt("openai", gpt, withRoute(rt(apiPlatform, platformURL))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
			msg: `Requested agent harness "codex" does not support openai/gpt-5.5 (route runtime policy is not declared).`,
		},
		{
			name: "seed: Leave fallbackRuntime absent for provider failures that must remain fail-closed",
			hs:   codex,
			ps:   []*v1alpha1.RuntimePolicy{policy("p", 0, prov("anthropic", "codex"))},
			a:    attempt("anthropic", "claude-opus-5"),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "issue: claude-cli for anthropic passes through to openclaw",
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model("anthropic/claude-opus-5", "claude-cli"))},
			a:       attempt("anthropic", "claude-opus-5"),
			runtime: "openclaw", reason: wire.ReasonCLIRuntimePassthroughOpenClaw, source: v1alpha1.RuntimeSourceModel, cli: "claude-cli",
		},
		{
			name:    "issue: google-gemini-cli for google passes through to openclaw",
			a:       attempt("google", "gemini-3-pro", whatIfOverride("google-gemini-cli")),
			runtime: "openclaw", reason: wire.ReasonCLIRuntimePassthroughOpenClaw, source: v1alpha1.RuntimeSourceOverride, cli: "google-gemini-cli",
		},
		{
			name:    "issue: a CLI backend alias passes through whether or not a harness has that id",
			hs:      []*v1alpha1.AgentHarness{harness("claude-cli", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"anthropic"}, RoutePolicy: v1alpha1.RoutePolicyAny}))},
			a:       attempt("anthropic", "claude-opus-5", whatIfOverride("claude-cli")),
			runtime: "openclaw", reason: wire.ReasonCLIRuntimePassthroughOpenClaw, source: v1alpha1.RuntimeSourceOverride, cli: "claude-cli",
		},
		{
			name: "issue: a CLI backend alias for another provider is an ordinary harness id",
			a:    attempt("openai", gpt, whatIfOverride("claude-cli")),
			code: wire.CodeHarnessNotRegistered, source: v1alpha1.RuntimeSourceOverride,
			msg: `Requested agent harness "claude-cli" is not registered.`,
		},
		{
			name:    "OpenClaw selection test (keeps a session-pinned harness across outer provider overrides): a locked pin skips the support check without route facts",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			sess:    session("other/m1", locked(), pinned("h1")),
			a:       &wire.Attempt{},
			runtime: "h1", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
			check: wantCand("h1", true, reasonPinUnchecked),
		},
		{
			name:    "seed: an unlocked session's pin takes no part: policy/auto decide (auto finds no supporter: openclaw)",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			sess:    session("other/m1", pinned("h1")),
			a:       &wire.Attempt{ModelProvider: &wire.ModelProvider{API: "x", BaseURL: "https://x.example", RequestTransportOverrides: wire.TransportOverridesNone}},
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name: "seed: once prepared facts exist, the selected harness must support them or the run fails closed",
			hs:   []*v1alpha1.AgentHarness{acme("h1", 5)},
			sess: session("other/m1", pinned("h1"), override("h1")),
			a:    &wire.Attempt{ModelProvider: &wire.ModelProvider{API: "x", BaseURL: "https://x.example", RequestTransportOverrides: wire.TransportOverridesNone}},
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "rule 1: for an unlocked session the override decides, with route facts too",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5), acme("h2", 1, written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyAny}))},
			sess:    session("acme/m1", pinned("h1"), override("h2")),
			a:       attempt("", "", withRoute(acmeRoute(func(m *wire.ModelProvider) { m.RequestTransportOverrides = wire.TransportOverridesNone }))),
			runtime: "h2", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "rule 1 (OpenClaw: pin ?? override): for a locked session the pin beats the override with route facts too",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5, written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyAny})), acme("h2", 1)},
			sess:    session("acme/m1", locked(), pinned("h1"), override("h2")),
			a:       attempt("", "", withRoute(acmeRoute(func(m *wire.ModelProvider) { m.RequestTransportOverrides = wire.TransportOverridesNone }))),
			runtime: "h1", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name: "seed: Explicit selection does not make an incompatible route compatible",
			hs:   codex,
			ps:   pol,
			a:    attempt("openai", gpt, withRoute(rt(apiPlatform, "https://proxy.example/v1", compat("openclaw")))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
			msg: `Requested agent harness "codex" does not support openai/gpt-5.5 (route runtime policy does not list the harness).`,
		},
		{
			name:    "seed: This does not block an explicit provider/model agentRuntime.id openclaw",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, model(openaiGPT, "openclaw"))},
			a:       attempt("openai", gpt),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceModel,
			check: wantCand("codex", true, ""),
		},
		unavailable("rule 3: WorkloadReady False is HarnessUnavailable (retryable)",
			withCond(v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse, "NoReadyPods", "0/2 server pods are Ready"),
			`Agent harness "codex" is unavailable: WorkloadReady is False (NoReadyPods: 0/2 server pods are Ready). Retry later.`),
		unavailable("rule 3: VersionSupported Unknown is HarnessUnavailable",
			withCond(v1alpha1.HarnessConditionVersionSupported, metav1.ConditionUnknown, "HandshakePending", "no handshake yet"),
			`Agent harness "codex" is unavailable: VersionSupported is Unknown (HandshakePending: no handshake yet). Retry later.`),
		unavailable("rule 3: VersionSupported HandshakeFailed is HarnessUnavailable",
			withCond(v1alpha1.HarnessConditionVersionSupported, metav1.ConditionFalse, "HandshakeFailed", "connection refused"), ""),
		unavailable("decision: VersionSupported False with an unknown reason is HarnessUnavailable",
			withCond(v1alpha1.HarnessConditionVersionSupported, metav1.ConditionFalse, "SomethingNew", ""), ""),
		unavailable("decision: a missing WorkloadReady condition counts as Unknown",
			dropCond(v1alpha1.HarnessConditionWorkloadReady),
			`Agent harness "codex" is unavailable: WorkloadReady is not reported yet. Retry later.`),
		unavailable("decision: a harness without status is unavailable for the dispatcher", noStatus(), ""),
		{
			name: "rule 3: below the version floor fails closed with the version error text",
			hs:   []*v1alpha1.AgentHarness{harness("codex", belowFloorCond("codex-cli 0.140.0 is below the version floor 0.149.0"))},
			ps:   pol,
			a:    attempt("openai", gpt),
			code: wire.CodeVersionBelowFloor, source: v1alpha1.RuntimeSourceProvider,
			msg: "codex-cli 0.140.0 is below the version floor 0.149.0",
		},
		{
			name: "decision: a below-floor condition without a message gets a generic text",
			hs:   []*v1alpha1.AgentHarness{harness("codex", belowFloorCond(""))},
			ps:   pol,
			a:    attempt("openai", gpt),
			code: wire.CodeVersionBelowFloor, source: v1alpha1.RuntimeSourceProvider,
			msg: `Agent harness "codex" runs a version below its floor.`,
		},
		{
			name:        "issue item 3: no status means registered and ready for offline explain",
			hs:          []*v1alpha1.AgentHarness{harness("codex", noStatus())},
			ps:          pol,
			assumeReady: true,
			a:           attempt("openai", gpt),
			runtime:     "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:        "decision: AssumeReadyWithoutStatus does not override reported conditions",
			hs:          []*v1alpha1.AgentHarness{harness("codex", withCond(v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse, "NoReadyPods", ""))},
			ps:          pol,
			assumeReady: true,
			a:           attempt("openai", gpt),
			code:        wire.CodeHarnessUnavailable, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "decision: readiness is not checked when the harness does not claim the route (lossless fallback)",
			hs:      []*v1alpha1.AgentHarness{harness("codex", belowFloorCond("old"))},
			ps:      pol,
			a:       attempt("openai", gpt, withRoute(codexRoute(overrides()))),
			runtime: "openclaw", reason: wire.ReasonPluginDeclaredFallbackOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "the harness id defaults to metadata.name",
			hs:      []*v1alpha1.AgentHarness{harness("codex-pool", noHarnessID())},
			a:       attempt("openai", gpt, whatIfOverride("codex-pool")),
			runtime: "codex-pool", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name: "rule 3: registered means an AgentHarness with that harness id, not that object name",
			hs:   []*v1alpha1.AgentHarness{harness("codex", objName("agents", "pool-a"))},
			a:    attempt("openai", gpt, whatIfOverride("pool-a")),
			code: wire.CodeHarnessNotRegistered, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "OpenClaw selection test (honors session-level OpenClaw pins): a locked session pinned to openclaw runs on it, whatever the policy",
			hs:      codex,
			ps:      pol,
			sess:    session(openaiGPT, locked(), pinned("openclaw")),
			a:       &wire.Attempt{},
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "OpenClaw (pin ?? override): a locked pin of auto leaves the policy in charge and sets the override aside",
			hs:      codex,
			ps:      pol,
			sess:    session(openaiGPT, locked(), pinned("auto"), override("openclaw")),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "rule 1: legacy whole-agent pins are ignored (only the session's own pin counts)",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "openclaw"))},
			sess:    session(openaiGPT),
			a:       &wire.Attempt{},
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
	}
}

func supportCases() []selectCase {
	pol := []*v1alpha1.RuntimePolicy{codexPol()}
	codex := []*v1alpha1.AgentHarness{harness("codex")}
	acmeBlock := func(s v1alpha1.HarnessSupport) []*v1alpha1.AgentHarness {
		if s.Providers == nil {
			s.Providers = []v1alpha1.ProviderID{"acme"}
		}
		return []*v1alpha1.AgentHarness{harness("h1", written(s))}
	}
	explicitAcme := func(name string, hs []*v1alpha1.AgentHarness, r wire.ModelProvider, code wire.ErrorCode) selectCase {
		tc := selectCase{
			name: name, hs: hs,
			a:      attempt("acme", "m1", whatIfOverride("h1"), withRoute(r)),
			source: v1alpha1.RuntimeSourceOverride,
		}
		if code != "" {
			tc.code = code
		} else {
			tc.runtime, tc.reason = "h1", wire.ReasonForcedPlugin
		}
		return tc
	}
	codexAuth := func(name string, src wire.AuthSource, mode string, req wire.AuthRequirement, ok bool) selectCase {
		tc := selectCase{
			name: name, hs: codex, ps: pol,
			a:      attempt("openai", gpt, withRoute(codexRoute(auth(src, mode, req)))),
			source: v1alpha1.RuntimeSourceProvider,
		}
		if ok {
			tc.runtime, tc.reason = "codex", wire.ReasonForcedPlugin
		} else {
			tc.code = wire.CodeHarnessUnsupported
		}
		return tc
	}
	return []selectCase{
		{
			name: "a written support block is the declaration and is not merged with the adapter defaults",
			hs:   []*v1alpha1.AgentHarness{harness("codex", written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, RoutePolicy: v1alpha1.RoutePolicyAny}))},
			ps:   pol,
			a:    attempt("openai", gpt),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "nativeProviders are exempt from the route policy when none is declared",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("codex", "codex"))},
			a:       attempt("codex", gpt, withRoute(rt("codex-native", chatgptURL))),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name: "nativeProviders are not exempt when a declared route policy omits the harness",
			hs:   codex,
			ps:   []*v1alpha1.RuntimePolicy{policy("p", 0, prov("codex", "codex"))},
			a:    attempt("codex", gpt, withRoute(rt("codex-native", chatgptURL, compat("other")))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
			msg: `Requested agent harness "codex" does not support codex/gpt-5.5 (route runtime policy does not list the harness).`,
		},
		explicitAcme("MustBeDeclared accepts a declared route policy that does not list the harness",
			acmeBlock(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyMustBeDeclared}), acmeRoute(compat()), ""),
		explicitAcme("MustBeDeclared refuses an undeclared route policy",
			acmeBlock(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyMustBeDeclared}), acmeRoute(), wire.CodeHarnessUnsupported),
		explicitAcme("routePolicy Any accepts an undeclared route policy",
			acmeBlock(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyAny}), acmeRoute(), ""),
		explicitAcme("decision: an empty routePolicy is the CRD default MustListHarness",
			acmeBlock(v1alpha1.HarnessSupport{}), acmeRoute(compat("other")), wire.CodeHarnessUnsupported),
		explicitAcme("MustListHarness accepts a route policy listing the harness",
			acmeBlock(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyMustListHarness}), acmeRoute(compat("other", "h1")), ""),
		explicitAcme("decision: route compatible ids are normalized runtime ids",
			acmeBlock(v1alpha1.HarnessSupport{}), acmeRoute(compat(" H1 ")), ""),
		explicitAcme("requestTransportOverrides Supported accepts authored overrides",
			acmeBlock(v1alpha1.HarnessSupport{RequestTransportOverrides: v1alpha1.RequestTransportOverridesSupported, RoutePolicy: v1alpha1.RoutePolicyAny}),
			acmeRoute(overrides()), ""),
		explicitAcme("requestTransportOverrides Unsupported fails closed without a fallback",
			acmeBlock(v1alpha1.HarnessSupport{RequestTransportOverrides: v1alpha1.RequestTransportOverridesUnsupported, RoutePolicy: v1alpha1.RoutePolicyAny}),
			acmeRoute(overrides()), wire.CodeHarnessUnsupported),
		explicitAcme("decision: an empty requestTransportOverrides declaration is the CRD default Unsupported",
			acmeBlock(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyAny}), acmeRoute(overrides()), wire.CodeHarnessUnsupported),
		explicitAcme("decision: a route whose overrides fact is missing counts as overrides present",
			acmeBlock(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyAny}),
			wire.ModelProvider{API: "acme-chat", BaseURL: "https://acme.example/v1"}, wire.CodeHarnessUnsupported),
		explicitAcme("preparedAuth absent in the support block means no auth check",
			acmeBlock(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyAny}),
			acmeRoute(auth(wire.AuthSourceNone, "", wire.AuthRequirementSubscription)), ""),
		explicitAcme("decision: an unknown prepared-auth requirement (an attempt that skipped Validate) fails closed",
			acmeBlock(v1alpha1.HarnessSupport{RoutePolicy: v1alpha1.RoutePolicyAny, PreparedAuth: &v1alpha1.PreparedAuthSupport{APIKeyModes: []string{"api-key"}}}),
			acmeRoute(auth(wire.AuthSourceProfile, "api-key", "bogus")), wire.CodeHarnessUnsupported),
		explicitAcme("decision: an adapter without defaults and no support block supports nothing",
			[]*v1alpha1.AgentHarness{harness("h1", func(h *v1alpha1.AgentHarness) { h.Spec.Adapter = "future-adapter" })},
			acmeRoute(), wire.CodeHarnessUnsupported),
		codexAuth("a subscription requirement accepts source profile with a subscription mode", wire.AuthSourceProfile, "oauth", wire.AuthRequirementSubscription, true),
		codexAuth("a subscription requirement refuses source direct", wire.AuthSourceDirect, "oauth", wire.AuthRequirementSubscription, false),
		codexAuth("a subscription requirement refuses a mode outside subscriptionModes", wire.AuthSourceProfile, "api-key", wire.AuthRequirementSubscription, false),
		codexAuth("an api-key requirement accepts source direct with an api-key mode", wire.AuthSourceDirect, "api_key", wire.AuthRequirementAPIKey, true),
		codexAuth("an api-key requirement accepts source profile with an api-key mode", wire.AuthSourceProfile, "api-key", wire.AuthRequirementAPIKey, true),
		codexAuth("seed: preparedAuth.source harness is an auth owner, not permission to infer route support", wire.AuthSourceHarness, "api-key", wire.AuthRequirementAPIKey, false),
		codexAuth("an api-key requirement refuses a mode outside apiKeyModes", wire.AuthSourceProfile, "oauth", wire.AuthRequirementAPIKey, false),
		codexAuth("issue: the prepared-auth check runs only when the route carries a requirement", wire.AuthSourceNone, "", "", true),
		codexAuth("decision: auth modes compare case-insensitively", wire.AuthSourceProfile, " OAuth ", wire.AuthRequirementSubscription, true),
		{
			name: "issue: support is checked in order: provider membership before transport overrides",
			hs:   codex,
			ps:   []*v1alpha1.RuntimePolicy{policy("p", 0, prov("acme", "codex"))},
			a:    attempt("acme", "m1", withRoute(acmeRoute(overrides()))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
			msg: `Requested agent harness "codex" does not support acme/m1 (provider is not supported).`,
		},
		{
			name:    "issue: support is checked in order: transport overrides before route policy (so the fallback applies)",
			hs:      codex,
			ps:      pol,
			a:       attempt("openai", gpt, withRoute(rt(apiPlatform, platformURL, overrides()))),
			runtime: "openclaw", reason: wire.ReasonPluginDeclaredFallbackOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name: "issue: support is checked in order: route policy before prepared auth",
			hs:   codex,
			ps:   pol,
			a:    attempt("openai", gpt, withRoute(rt(apiPlatform, platformURL, auth(wire.AuthSourceDirect, "x", wire.AuthRequirementSubscription)))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
			msg: `Requested agent harness "codex" does not support openai/gpt-5.5 (route runtime policy is not declared).`,
		},
	}
}

func retrySetCases() []selectCase {
	codex := []*v1alpha1.AgentHarness{harness("codex")}
	pol := []*v1alpha1.RuntimePolicy{codexPol()}
	chatgpt := rt(apiChatGPT, chatgptURL, compat("codex"))
	mustList := func(id string, prio int32) *v1alpha1.AgentHarness {
		return harness(id, written(v1alpha1.HarnessSupport{Providers: []v1alpha1.ProviderID{"acme"}, Priority: ptr.To(prio)}))
	}
	return []selectCase{
		{
			name: "rule 4: routes that agree run the set on their runtime",
			hs:   codex, ps: pol,
			a:       attempt("openai", gpt, withRetrySet(codexRoute(), chatgpt)),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: wantRoutes("modelProviders[0]=codex/forced_plugin", "modelProviders[1]=codex/forced_plugin"),
		},
		{
			name: "rule 4: any fail-closed route fails the set",
			hs:   codex, ps: pol,
			a:    attempt("openai", gpt, withRetrySet(codexRoute(), rt(apiPlatform, platformURL))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
			msg:   `Requested agent harness "codex" does not support openai/gpt-5.5 (modelProviders[1]: route runtime policy is not declared).`,
			check: wantRoutes("modelProviders[0]=codex/forced_plugin", "modelProviders[1]=HarnessUnsupported"),
		},
		{
			name: "rule 4: routes that disagree run the set on openclaw",
			hs:   codex, ps: pol,
			a:       attempt("openai", gpt, withRetrySet(codexRoute(), codexRoute(overrides()))),
			runtime: "openclaw", reason: wire.ReasonPluginDeclaredFallbackOpenClaw, source: v1alpha1.RuntimeSourceProvider,
			check: wantRoutes("modelProviders[0]=codex/forced_plugin", "modelProviders[1]=openclaw/plugin_declared_fallback_openclaw"),
		},
		{
			name: "seed: an explicit plugin selection of a retry set fails closed unless the plugin declares the lossless fallback",
			hs:   codex, ps: pol,
			a:    attempt("openai", gpt, withRetrySet(codexRoute(overrides()), rt(apiPlatform, platformURL))),
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name:    "seed: Implicit selection uses OpenClaw if no plugin can own the full set",
			hs:      []*v1alpha1.AgentHarness{acme("h1", 5)},
			a:       attempt("acme", "m1", withRetrySet(acmeRoute(), acmeRoute(overrides()))),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: wantRoutes("modelProviders[0]=h1/auto_plugin", "modelProviders[1]=openclaw/auto_openclaw"),
		},
		{
			name:    "rule 4: auto routes that choose different harnesses run the set on openclaw",
			hs:      []*v1alpha1.AgentHarness{mustList("h1", 9), mustList("h2", 1)},
			a:       attempt("acme", "m1", withRetrySet(acmeRoute(compat("h1", "h2")), acmeRoute(compat("h2")))),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
			check: all(wantRoutes("modelProviders[0]=h1/auto_plugin", "modelProviders[1]=h2/auto_plugin"),
				wantCand("h1", false, "modelProviders[1]: "+reasonRouteNotListed), wantCand("h2", true, "")),
		},
		{
			name:    "rule 4: a set with one custom openai route runs on openclaw",
			hs:      codex,
			a:       attempt("openai", gpt, withRetrySet(codexRoute(), rt(apiPlatform, "https://proxy.example/v1", compat("codex")))),
			runtime: "openclaw", reason: wire.ReasonAutoOpenClaw, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name:    "rule 4: implicit codex on a set of official routes is selected for the set",
			hs:      codex,
			a:       attempt("openai", gpt, withRetrySet(codexRoute(), chatgpt)),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name: "decision: the selected route repeated in its retry set is one route",
			hs:   codex, ps: pol,
			a:       attempt("openai", gpt, withRoute(codexRoute()), withRetrySet(codexRoute())),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: func(t *testing.T, d wire.Decision) {
				if len(d.Routes) != 0 {
					t.Errorf("routes = %+v", d.Routes)
				}
			},
		},
		{
			name: "decision: modelProvider and a different retry set are decided together",
			hs:   codex, ps: pol,
			a:       attempt("openai", gpt, withRoute(codexRoute()), withRetrySet(chatgpt)),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: wantRoutes("modelProvider=codex/forced_plugin", "modelProviders[0]=codex/forced_plugin"),
		},
		{
			name: "rule 4: the harness that runs the set must be available",
			hs:   []*v1alpha1.AgentHarness{harness("codex", withCond(v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse, "NoReadyPods", ""))},
			ps:   pol,
			a:    attempt("openai", gpt, withRetrySet(codexRoute(), chatgpt)),
			code: wire.CodeHarnessUnavailable, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name: "seed: one undeclared candidate makes native compatibility empty (an explicit set)",
			hs:   codex,
			sess: session(openaiGPT, pinned("codex"), override("codex")),
			a:    &wire.Attempt{ModelProviders: []wire.ModelProvider{codexRoute(), rt(apiChatGPT, chatgptURL)}},
			code: wire.CodeHarnessUnsupported, source: v1alpha1.RuntimeSourceOverride,
		},
	}
}

func toolPolicyCases() []selectCase {
	pol := []*v1alpha1.RuntimePolicy{codexPol()}
	labelled := []*v1alpha1.AgentHarness{harness("codex", label("Codex"))}
	gated := func(name string, opts ...aopt) selectCase {
		return selectCase{
			name: name, hs: labelled, ps: pol,
			a:    attempt("openai", gpt, opts...),
			code: wire.CodeToolPolicyUnenforceable, source: v1alpha1.RuntimeSourceProvider,
			msg: "Codex" + toolMsg,
			check: func(t *testing.T, d wire.Decision) {
				wantTools(true)(t, d)
				if d.HarnessID != "codex" || len(d.ToolPolicy.Reasons) == 0 {
					t.Errorf("harnessId %q reasons %v", d.HarnessID, d.ToolPolicy.Reasons)
				}
			},
		}
	}
	runs := func(name string, hs []*v1alpha1.AgentHarness, restricted bool, safe []string, opts ...aopt) selectCase {
		return selectCase{
			name: name, hs: hs, ps: pol,
			a:       attempt("openai", gpt, opts...),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
			check: wantTools(restricted, safe...),
		}
	}
	exactCodex := []*v1alpha1.AgentHarness{harness("codex", exact("web_search", "exec"))}
	return []selectCase{
		gated("rule 6: a restricted turn on a harness without Exact fails closed", tools(denyExec)),
		{
			name: "issue: the tool-policy message names the harness id when it has no label",
			hs:   []*v1alpha1.AgentHarness{harness("codex")}, ps: pol,
			a:    attempt("openai", gpt, tools(denyExec)),
			code: wire.CodeToolPolicyUnenforceable, source: v1alpha1.RuntimeSourceProvider,
			msg: "codex" + toolMsg,
		},
		runs("rule 6: a harness declaring Exact runs a restricted turn", exactCodex, true, nil, tools(wire.ToolPolicy{Layers: []wire.ToolPolicyLayer{{Deny: []string{"browser"}}}})),
		gated("seed: Core passes pluginHarnessToolPolicyRestricted as the prepared decision (the stricter verdict wins)",
			func(a *wire.Attempt) { a.PluginHarnessToolPolicyRestricted = true }),
		gated("issue: disableTools denies everything and restricts", func(a *wire.Attempt) { a.DisableTools = true }),
		gated("issue: toolsAllow [] denies everything and restricts", func(a *wire.Attempt) { a.ToolsAllow = wire.ToolList{} }),
		runs("issue: an absent toolsAllow restricts nothing", labelled, false, nil),
		runs("seed: Core preserves the native surface only when every expanded deny is a known core tool in the audited safe list",
			exactCodex, false, []string{"exec", "web_search"}, tools(wire.ToolPolicy{Layers: []wire.ToolPolicyLayer{{Deny: []string{"web_search", "bash"}}}})),
		runs("seed: wildcards remain native-surface restrictions even with a safe list",
			exactCodex, true, nil, tools(wire.ToolPolicy{Layers: []wire.ToolPolicyLayer{{Deny: []string{"*"}}}})),
		gated("issue: declared native tools the messaging profile does not allow restrict Codex", tools(wire.ToolPolicy{Profile: "messaging"})),
		runs("seed: Default tool-profile narrowing does not set this flag (coding allows Codex's native tools)", labelled, false, nil,
			tools(wire.ToolPolicy{Profile: "coding"})),
		gated("issue: a finite allowlist in a layer restricts", tools(wire.ToolPolicy{Layers: []wire.ToolPolicyLayer{{Allow: wire.ToolList{"read"}}}})),
		runs("issue: an allowlist containing * does not restrict", labelled, false, nil, tools(wire.ToolPolicy{Layers: []wire.ToolPolicyLayer{{Allow: wire.ToolList{"*"}}}})),
		runs("declared native tools replace the adapter default", []*v1alpha1.AgentHarness{harness("codex", nativeTools("read"))}, false, nil,
			tools(wire.ToolPolicy{Profile: "coding"})),
		{
			name: "rule 6: the gate does not apply to the embedded runtime",
			hs:   labelled, ps: pol,
			a:       attempt("openai", gpt, whatIfOverride("openclaw"), tools(denyExec)),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceOverride,
			check: func(t *testing.T, d wire.Decision) {
				if d.ToolPolicy != nil {
					t.Errorf("toolPolicy = %+v", d.ToolPolicy)
				}
			},
		},
		{
			name: "rule 6: implicit codex is gated too",
			hs:   labelled,
			a:    attempt("openai", gpt, tools(denyExec), withRoute(codexRoute())),
			code: wire.CodeToolPolicyUnenforceable, source: v1alpha1.RuntimeSourceImplicit,
		},
		{
			name: "rule 6: an auto_plugin selection is gated too",
			hs:   []*v1alpha1.AgentHarness{acme("h1", 5, label("Acme Agent"))},
			a:    attempt("acme", "m1", tools(denyExec)),
			code: wire.CodeToolPolicyUnenforceable, source: v1alpha1.RuntimeSourceImplicit,
			msg: "Acme Agent" + toolMsg,
		},
		{
			name: "decision: ToolPolicyUnenforceable is reported before the transient HarnessUnavailable",
			hs:   []*v1alpha1.AgentHarness{harness("codex", withCond(v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse, "NoReadyPods", ""))},
			ps:   pol,
			a:    attempt("openai", gpt, tools(denyExec)),
			code: wire.CodeToolPolicyUnenforceable, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name: "decision: VersionBelowFloor is reported before ToolPolicyUnenforceable",
			hs:   []*v1alpha1.AgentHarness{harness("codex", belowFloorCond("too old"))},
			ps:   pol,
			a:    attempt("openai", gpt, tools(denyExec)),
			code: wire.CodeVersionBelowFloor, source: v1alpha1.RuntimeSourceProvider, msg: "too old",
		},
	}
}

func sessionCases() []selectCase {
	codex := []*v1alpha1.AgentHarness{harness("codex")}
	pol := []*v1alpha1.RuntimePolicy{codexPol()}
	mismatch := func(name string, a *wire.Attempt, sess *v1alpha1.AgentSession, msg string) selectCase {
		if sess == nil {
			sess = session(openaiGPT)
		}
		return selectCase{name: name, hs: codex, ps: pol, sess: sess, a: a, code: wire.CodeSessionMismatch, msg: msg,
			check: func(t *testing.T, d wire.Decision) {
				if len(d.Candidates) != 0 || d.Runtime != "" || d.RuntimeSource != "" {
					t.Errorf("a SessionMismatch decision carries more than the error: %+v", d)
				}
			}}
	}
	// A mismatch of the model alone has scope harness (session_test.go).
	modelOnly := func(c selectCase) selectCase {
		c.scope = wire.ScopeHarness
		return c
	}
	return []selectCase{
		mismatch("an attempt whose agentId contradicts the session is SessionMismatch", &wire.Attempt{AgentID: "other"}, nil,
			`The attempt contradicts AgentSession agents/demo: agentId "other" does not match spec.agentId "main".`),
		mismatch("an attempt whose sessionKey contradicts the session is SessionMismatch", &wire.Attempt{SessionKey: "agent:main:other"}, nil, ""),
		mismatch("an attempt whose sessionId contradicts the session is SessionMismatch", &wire.Attempt{SessionID: "s-2"}, nil, ""),
		modelOnly(mismatch("an attempt whose provider contradicts spec.model is SessionMismatch", &wire.Attempt{Provider: "anthropic"}, nil,
			`The attempt contradicts AgentSession agents/demo: provider "anthropic" does not match spec.model "openai/gpt-5.5". `+
				`Update spec.model before the turn to change the session's model.`)),
		modelOnly(mismatch("an attempt whose modelId contradicts spec.model is SessionMismatch", &wire.Attempt{Provider: "openai", ModelID: "gpt-4.1"}, nil, "")),
		modelOnly(mismatch("a provider/model modelId naming another provider is SessionMismatch", &wire.Attempt{ModelID: "azure/gpt-5.5"}, nil, "")),
		mismatch("an attempt pin the session does not have is SessionMismatch", &wire.Attempt{AgentHarnessID: "codex"}, nil,
			`The attempt contradicts AgentSession agents/demo: agentHarnessId "codex" does not match status.agentHarnessId "".`),
		mismatch("an attempt override that contradicts spec.runtimeOverride is SessionMismatch",
			&wire.Attempt{AgentHarnessRuntimeOverride: "codex"}, session(openaiGPT, override("openclaw")), ""),
		mismatch("every mismatching field is reported at once", &wire.Attempt{AgentID: "x", SessionID: "y"}, nil,
			`The attempt contradicts AgentSession agents/demo: agentId "x" does not match spec.agentId "main"; sessionId "y" does not match spec.sessionId "s-1".`),
		{
			name: "empty attempt fields are not compared",
			hs:   codex, ps: pol, sess: session(openaiGPT),
			a:       &wire.Attempt{},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name: "repeated fields that match are accepted (provider case, provider prefix, runtime aliases)",
			hs:   codex, ps: pol,
			sess: session(openaiGPT, locked(), pinned("codex"), override("openclaw")),
			a: &wire.Attempt{AgentID: "main", SessionKey: "agent:main:demo", SessionID: "s-1", Provider: "OpenAI", ModelID: openaiGPT,
				AgentHarnessID: "codex-app-server", AgentHarnessRuntimeOverride: "pi"},
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name:    "issue item 3: without a session the attempt's pin is evaluated (what if)",
			hs:      codex,
			a:       attempt("openai", gpt, whatIfPin("codex")),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceSession,
		},
		{
			name: "issue item 3: without a session the attempt's override is evaluated (what if)",
			hs:   codex, ps: pol,
			a:       attempt("openai", gpt, whatIfOverride("openclaw")),
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceOverride,
		},
		{
			name:    "the session's model is authoritative for policy",
			hs:      codex,
			ps:      []*v1alpha1.RuntimePolicy{policy("p", 0, prov("anthropic", "openclaw"))},
			sess:    session("anthropic/claude-opus-5"),
			a:       &wire.Attempt{},
			runtime: "openclaw", reason: wire.ReasonForcedOpenClaw, source: v1alpha1.RuntimeSourceProvider,
		},
		{
			name: "decision: a nil attempt is an empty attempt",
			hs:   codex, ps: pol, sess: session(openaiGPT),
			runtime: "codex", reason: wire.ReasonForcedPlugin, source: v1alpha1.RuntimeSourceProvider,
		},
	}
}

func TestValidateAgainstSession(t *testing.T) {
	sess := session(openaiGPT)
	if err := ValidateAgainstSession(sess, &wire.Attempt{AgentID: "main"}); err != nil {
		t.Fatalf("matching attempt: %v", err)
	}
	if err := ValidateAgainstSession(nil, &wire.Attempt{AgentID: "x"}); err != nil {
		t.Fatalf("no session: %v", err)
	}
	err := ValidateAgainstSession(sess, &wire.Attempt{AgentID: "x"})
	var e *wire.Error
	if !errors.As(err, &e) || e.Code != wire.CodeSessionMismatch || e.Retryable || e.Code.HTTPStatus() != 422 {
		t.Fatalf("err = %#v", err)
	}
	if !strings.Contains(err.Error(), "SessionMismatch: ") {
		t.Errorf("Error() = %q", err.Error())
	}
}

// TestPinUse checks the decision's account of the ownership pin, which
// explain prints: whether it took part (only a locked session's pin does, as
// OpenClaw's resolveSessionPinnedHarnessId) and whether it was checked
// against route facts.
func TestPinUse(t *testing.T) {
	codex := []*v1alpha1.AgentHarness{harness("codex")}
	for _, tc := range []struct {
		name string
		sess *v1alpha1.AgentSession
		a    *wire.Attempt
		want *wire.PinUse
	}{
		{"no pin", session(openaiGPT, locked()), &wire.Attempt{}, nil},
		{"locked, route facts pending: used unchecked", session(openaiGPT, locked(), pinned("codex")), &wire.Attempt{},
			&wire.PinUse{HarnessID: "codex", Use: wire.PinUnchecked}},
		{"locked, route facts: checked against them", session(openaiGPT, locked(), pinned("codex")), attempt("", "", withRoute(codexRoute())),
			&wire.PinUse{HarnessID: "codex", Use: wire.PinChecked}},
		{"unlocked: no part", session(openaiGPT, pinned("codex")), &wire.Attempt{},
			&wire.PinUse{HarnessID: "codex", Use: wire.PinUnlocked}},
		{"made stale by a reset: no part", session(openaiGPT, locked(), pinned("codex"), boundAt(0), resetTo(1)), &wire.Attempt{},
			&wire.PinUse{HarnessID: "codex", Use: wire.PinStale}},
		{"a pin of auto", session(openaiGPT, locked(), pinned("auto")), &wire.Attempt{},
			&wire.PinUse{HarnessID: "auto", Use: wire.PinAuto}},
		{"a what-if pin counts as a locked session's", nil, attempt("openai", gpt, whatIfPin("codex"), withRoute(codexRoute())),
			&wire.PinUse{HarnessID: "codex", Use: wire.PinChecked}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Select(Snapshot{Harnesses: codex, Session: tc.sess}, tc.a)
			if !reflect.DeepEqual(d.Pin, tc.want) {
				t.Fatalf("pin = %+v, want %+v (decision %+v)", d.Pin, tc.want, d)
			}
		})
	}
}
