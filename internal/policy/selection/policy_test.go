package selection

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// The cases check what docs/api.md describes (RuntimePolicy, AgentHarness);
// "rule N" in a message is that rule of docs/design/contract-rules.md.
func TestResolvePolicySources(t *testing.T) {
	key := PolicyKey{AgentID: "main", Provider: "openai", Model: gpt}
	cases := []struct {
		name     string
		ps       []*v1alpha1.RuntimePolicy
		runtime  string
		source   v1alpha1.PolicySource
		enforced bool
	}{
		{"no entry applies: auto from the default", nil, "auto", v1alpha1.PolicySourceDefault, false},
		{"an agent entry reports source agent", []*v1alpha1.RuntimePolicy{policy("p", 0, agent("main", gpt, "codex"))}, "codex", v1alpha1.PolicySourceAgent, false},
		{"a model ref reports source model", []*v1alpha1.RuntimePolicy{policy("p", 0, model(openaiGPT, "codex"))}, "codex", v1alpha1.PolicySourceModel, false},
		{"a catalog row reports source catalog", []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "", row{gpt, "codex"}))}, "codex", v1alpha1.PolicySourceCatalog, false},
		{"provider/* reports source provider-wildcard", []*v1alpha1.RuntimePolicy{policy("p", 0, model("openai/*", "codex"))}, "codex", v1alpha1.PolicySourceProviderWildcard, false},
		{"a provider-wide runtime reports source provider", []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "codex"))}, "codex", v1alpha1.PolicySourceProvider, false},
		{"a Deny policy that governs the key enforces", []*v1alpha1.RuntimePolicy{codexOnly()}, "codex", v1alpha1.PolicySourceProvider, true},
		{"issue: policy runtime ids are normalized", []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", " PI "))}, "openclaw", v1alpha1.PolicySourceProvider, false},
		{"a Deny policy for another provider does not enforce", []*v1alpha1.RuntimePolicy{policy("d", 0, prov("acme", "h1"), deny()), nil}, "auto", v1alpha1.PolicySourceDefault, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ResolvePolicy(tc.ps, key)
			if r.Runtime != tc.runtime || r.Source != tc.source || r.Enforced != tc.enforced {
				t.Errorf("got %+v, want %s %s enforced=%v", r, tc.runtime, tc.source, tc.enforced)
			}
		})
	}
}

func TestResolvePolicyUnknownProvider(t *testing.T) {
	ps := []*v1alpha1.RuntimePolicy{policy("p", 0, prov("openai", "codex"), model("openai/*", "codex"), model(gpt, "openclaw"))}
	r := ResolvePolicy(ps, PolicyKey{AgentID: "main", Model: gpt})
	if r.Runtime != "openclaw" || r.Source != v1alpha1.PolicySourceModel {
		t.Errorf("issue: provider-scoped entries never match an unknown provider; got %+v", r)
	}
}

func TestNormalizeRuntimeID(t *testing.T) {
	for in, want := range map[string]string{
		"": "auto", "  ": "auto", "default": "auto", "DEFAULT": "auto", "auto": "auto",
		"pi": "openclaw", " Pi ": "openclaw", "openclaw": "openclaw",
		"codex-app-server": "codex", "Codex": "codex", "claude-cli": "claude-cli", "my-harness": "my-harness",
	} {
		if got := NormalizeRuntimeID(in); got != want {
			t.Errorf("issue: NormalizeRuntimeID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitModel(t *testing.T) {
	for _, tc := range []struct{ provider, model, wantP, wantM string }{
		{"openai", "gpt-5.5", "openai", "gpt-5.5"},
		{"", "openai/gpt-5.5", "openai", "gpt-5.5"},
		{"", "OpenAI/gpt-5.5", "openai", "gpt-5.5"},
		{"OPENAI", "openai/gpt-5.5", "openai", "gpt-5.5"},
		{"openrouter", "anthropic/claude", "openrouter", "anthropic/claude"},
		{"", "gpt-5.5", "", "gpt-5.5"},
		{"", "/gpt", "", "/gpt"},
		{"", "", "", ""},
	} {
		p, m := SplitModel(tc.provider, tc.model)
		if p != tc.wantP || m != tc.wantM {
			t.Errorf("issue: SplitModel(%q, %q) = %q, %q; want %q, %q", tc.provider, tc.model, p, m, tc.wantP, tc.wantM)
		}
	}
}

func TestCLIBackendProvider(t *testing.T) {
	for rt, want := range map[string]string{"claude-cli": "anthropic", "google-gemini-cli": "google", "codex": ""} {
		got, ok := CLIBackendProvider(rt)
		if got != want || ok != (want != "") {
			t.Errorf("rule 3: CLIBackendProvider(%q) = %q, %v", rt, got, ok)
		}
	}
}

func TestAdapterDefaults(t *testing.T) {
	d, ok := AdapterDefaults(v1alpha1.AdapterCodexAppServer)
	if !ok {
		t.Fatal("no codex defaults")
	}
	s := d.Support
	if !slices.Equal(s.Providers, []v1alpha1.ProviderID{"codex", "openai"}) || s.Priority == nil || *s.Priority != 100 ||
		s.RequestTransportOverrides != v1alpha1.RequestTransportOverridesUnsupportedWithFallback ||
		s.RoutePolicy != v1alpha1.RoutePolicyMustListHarness || !slices.Equal(s.NativeProviders, []v1alpha1.ProviderID{"codex"}) ||
		!slices.Equal(s.PreparedAuth.SubscriptionModes, []string{"oauth", "token"}) ||
		!slices.Equal(s.PreparedAuth.APIKeyModes, []string{"api-key", "api_key"}) ||
		!slices.Equal(d.ConversationToolPolicyNativeTools, []v1alpha1.ToolID{"exec", "process", "read", "write", "edit", "apply_patch"}) {
		t.Errorf("codex defaults = %+v", d)
	}
	// Fresh copies: a caller that edits its copy changes nothing for the next one.
	d.Support.Providers[0] = "mutated"
	*d.Support.Priority = 1
	d.Support.PreparedAuth.APIKeyModes[0] = "mutated"
	again, _ := AdapterDefaults(v1alpha1.AdapterCodexAppServer)
	if again.Support.Providers[0] != "codex" || *again.Support.Priority != 100 || again.Support.PreparedAuth.APIKeyModes[0] != "api-key" {
		t.Errorf("AdapterDefaults shares state between calls")
	}
	if codexDefaults.Support.Providers[0] != "codex" {
		t.Errorf("AdapterDefaults shares state with Select")
	}
	if _, ok := AdapterDefaults("future-adapter"); ok {
		t.Errorf("unknown adapter has defaults")
	}
}

func TestHarnessVisible(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Bogus"}}}
	allowed := func(from v1alpha1.NamespacesFrom, s *metav1.LabelSelector) hopt {
		return func(h *v1alpha1.AgentHarness) {
			h.Spec.AllowedNamespaces = &v1alpha1.AllowedNamespaces{From: from, Selector: s}
		}
	}
	// The fixtures' harnesses live in "agents"; accepts is the label by which
	// another namespace consents to them.
	accepts := map[string]string{v1alpha1.AcceptHarnessesLabel("agents"): "true"}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		maps.Copy(out, accepts)
		maps.Copy(out, extra)
		return out
	}
	empty := &metav1.LabelSelector{}
	cases := []struct {
		name    string
		h       *v1alpha1.AgentHarness
		ns      string
		labels  map[string]string
		want    bool
		wantErr bool
	}{
		{"allowedNamespaces defaults to Same (own namespace)", harness("c"), "agents", nil, true, false},
		{"Same hides the harness from other namespaces", harness("c"), "other", accepts, false, false},
		{"explicit Same", harness("c", allowed(v1alpha1.NamespacesFromSame, nil)), "other", accepts, false, false},
		{"All admits every consenting namespace", harness("c", allowed(v1alpha1.NamespacesFromAll, nil)), "other", accepts, true, false},
		{"All serves its own namespace without a label", harness("c", allowed(v1alpha1.NamespacesFromAll, nil)), "agents", nil, true, false},
		{"Selector admits matching consenting namespaces", harness("c", allowed(v1alpha1.NamespacesFromSelector, sel)), "x", with(map[string]string{"team": "a"}), true, false},
		{"Selector refuses other namespaces", harness("c", allowed(v1alpha1.NamespacesFromSelector, sel)), "x", with(map[string]string{"team": "b"}), false, false},
		{"Selector on its own namespace needs its labels to match", harness("c", allowed(v1alpha1.NamespacesFromSelector, sel)), "agents", nil, false, false},
		{"tenancy: All does not capture a namespace that did not consent", harness("c", allowed(v1alpha1.NamespacesFromAll, nil)), "other", nil, false, false},
		{"tenancy: a matching Selector does not capture a namespace that did not consent", harness("c", allowed(v1alpha1.NamespacesFromSelector, sel)), "x", map[string]string{"team": "a"}, false, false},
		{"tenancy: consent names the harness namespace: consent to another one does not count", harness("c", allowed(v1alpha1.NamespacesFromAll, nil)), "other",
			map[string]string{v1alpha1.AcceptHarnessesLabel("elsewhere"): "true"}, false, false},
		{"tenancy: consent is the value true, nothing else", harness("c", allowed(v1alpha1.NamespacesFromAll, nil)), "other",
			map[string]string{v1alpha1.AcceptHarnessesLabel("agents"): "yes"}, false, false},
		{"tenancy: a consenting namespace is served by a Selector harness that matches it", harness("c", allowed(v1alpha1.NamespacesFromSelector, sel)), "x", with(map[string]string{"team": "a"}), true, false},
		{"tenancy: an empty selector is All: every consenting namespace", harness("c", allowed(v1alpha1.NamespacesFromSelector, empty)), "other", accepts, true, false},
		{"tenancy: an empty selector is All: no namespace that did not consent", harness("c", allowed(v1alpha1.NamespacesFromSelector, empty)), "other", nil, false, false},
		{"decision: Selector without a selector admits nothing", harness("c", allowed(v1alpha1.NamespacesFromSelector, nil)), "agents", nil, false, false},
		{"decision: an unknown mode admits nothing", harness("c", allowed("Everyone", nil)), "other", accepts, false, false},
		{"decision: an invalid selector is an error", harness("c", allowed(v1alpha1.NamespacesFromSelector, bad)), "x", accepts, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HarnessVisible(tc.h, tc.ns, tc.labels)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("got %v, %v", got, err)
			}
		})
	}
}

func TestPolicySelects(t *testing.T) {
	withSel := func(s *metav1.LabelSelector) *v1alpha1.RuntimePolicy {
		p := policy("p", 0, prov("openai", "codex"))
		p.Spec.NamespaceSelector = s
		return p
	}
	for _, tc := range []struct {
		name    string
		p       *v1alpha1.RuntimePolicy
		labels  map[string]string
		want    bool
		wantErr bool
	}{
		{"an omitted namespaceSelector selects every namespace", withSel(nil), nil, true, false},
		{"an empty namespaceSelector selects every namespace", withSel(&metav1.LabelSelector{}), nil, true, false},
		{"a namespaceSelector selects matching namespaces", withSel(&metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}), map[string]string{"env": "prod"}, true, false},
		{"a namespaceSelector skips other namespaces", withSel(&metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}), map[string]string{"env": "dev"}, false, false},
		{"decision: an invalid namespaceSelector is an error", withSel(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Bogus"}}}), nil, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PolicySelects(tc.p, tc.labels)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("got %v, %v", got, err)
			}
		})
	}
}
