package selection

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// t0 is the creation time of every fixture unless an age is given.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Official routes (implicit codex: docs/design/contract-rules.md, rule 2).
const (
	platformURL = "https://api.openai.com/v1"
	chatgptURL  = "https://chatgpt.com/backend-api/codex"
	apiPlatform = "openai-responses"
	apiChatGPT  = "openai-chatgpt-responses"
)

type hopt func(*v1alpha1.AgentHarness)

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(t0)}
}

// harness is a ready codex-app-server harness in namespace agents whose
// support block is omitted (adapter defaults apply).
func harness(id string, opts ...hopt) *v1alpha1.AgentHarness {
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: id, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       v1alpha1.AgentHarnessSpec{HarnessID: id, Adapter: v1alpha1.AdapterCodexAppServer},
		Status: v1alpha1.AgentHarnessStatus{Conditions: []metav1.Condition{
			cond(v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionTrue, "PodsReady", ""),
			cond(v1alpha1.HarnessConditionVersionSupported, metav1.ConditionTrue, "VersionAccepted", ""),
			cond(v1alpha1.HarnessConditionReady, metav1.ConditionTrue, "Ready", ""),
		}},
	}
	for _, o := range opts {
		o(h)
	}
	return h
}

// acme is a harness with a written support block for provider acme that
// accepts any route.
func acme(id string, priority int32, opts ...hopt) *v1alpha1.AgentHarness {
	return harness(id, append([]hopt{written(v1alpha1.HarnessSupport{
		Providers:   []v1alpha1.ProviderID{"acme"},
		Priority:    ptr.To(priority),
		RoutePolicy: v1alpha1.RoutePolicyAny,
	})}, opts...)...)
}

func written(s v1alpha1.HarnessSupport) hopt {
	return func(h *v1alpha1.AgentHarness) { h.Spec.Support = &s }
}

func label(l string) hopt { return func(h *v1alpha1.AgentHarness) { h.Spec.Label = l } }

func objName(ns, name string) hopt {
	return func(h *v1alpha1.AgentHarness) { h.Namespace, h.Name = ns, name }
}

func noHarnessID() hopt { return func(h *v1alpha1.AgentHarness) { h.Spec.HarnessID = "" } }

func created(days int) hopt {
	return func(h *v1alpha1.AgentHarness) { h.CreationTimestamp = metav1.NewTime(t0.AddDate(0, 0, days)) }
}

func autoSel(mode v1alpha1.AutoSelectionMode, providers ...v1alpha1.ProviderID) hopt {
	return func(h *v1alpha1.AgentHarness) {
		h.Spec.AutoSelection = &v1alpha1.AutoSelection{Mode: mode, Providers: providers}
	}
}

func exact(safe ...v1alpha1.ToolID) hopt {
	return func(h *v1alpha1.AgentHarness) {
		h.Spec.ConversationToolPolicySupport = v1alpha1.ToolPolicySupportExact
		h.Spec.ConversationToolPolicySafeDenyTools = safe
	}
}

func nativeTools(ids ...v1alpha1.ToolID) hopt {
	return func(h *v1alpha1.AgentHarness) { h.Spec.ConversationToolPolicyNativeTools = ids }
}

// withCond replaces (or adds) one condition.
func withCond(typ string, status metav1.ConditionStatus, reason, msg string) hopt {
	return func(h *v1alpha1.AgentHarness) {
		for i := range h.Status.Conditions {
			if h.Status.Conditions[i].Type == typ {
				h.Status.Conditions[i] = cond(typ, status, reason, msg)
				return
			}
		}
		h.Status.Conditions = append(h.Status.Conditions, cond(typ, status, reason, msg))
	}
}

func dropCond(typ string) hopt {
	return func(h *v1alpha1.AgentHarness) {
		var keep []metav1.Condition
		for _, c := range h.Status.Conditions {
			if c.Type != typ {
				keep = append(keep, c)
			}
		}
		h.Status.Conditions = keep
	}
}

func noStatus() hopt {
	return func(h *v1alpha1.AgentHarness) { h.Status = v1alpha1.AgentHarnessStatus{} }
}

func belowFloorCond(msg string) hopt {
	return withCond(v1alpha1.HarnessConditionVersionSupported, metav1.ConditionFalse, "VersionBelowFloor", msg)
}

type popt func(*v1alpha1.RuntimePolicy)

// policy is a RuntimePolicy created `age` days after t0.
func policy(name string, age int, opts ...popt) *v1alpha1.RuntimePolicy {
	p := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.AddDate(0, 0, age))}}
	for _, o := range opts {
		o(p)
	}
	return p
}

type row struct{ id, runtime string }

func prov(provider, runtime string, rows ...row) popt {
	return func(p *v1alpha1.RuntimePolicy) {
		pr := v1alpha1.ProviderRuntimePolicy{Provider: v1alpha1.ProviderID(provider), Runtime: v1alpha1.RuntimeID(runtime)}
		for _, r := range rows {
			pr.Models = append(pr.Models, v1alpha1.ProviderModelRuntime{ID: r.id, Runtime: v1alpha1.RuntimeID(r.runtime)})
		}
		p.Spec.Providers = append(p.Spec.Providers, pr)
	}
}

func model(ref, runtime string) popt {
	return func(p *v1alpha1.RuntimePolicy) {
		p.Spec.Models = append(p.Spec.Models, v1alpha1.ModelRuntimePolicy{Ref: ref, Runtime: v1alpha1.RuntimeID(runtime)})
	}
}

func agent(id, ref, runtime string) popt {
	return func(p *v1alpha1.RuntimePolicy) {
		p.Spec.Agents = append(p.Spec.Agents, v1alpha1.AgentRuntimePolicy{
			AgentID: id, Models: []v1alpha1.ModelRuntimePolicy{{Ref: ref, Runtime: v1alpha1.RuntimeID(runtime)}},
		})
	}
}

func deny() popt {
	return func(p *v1alpha1.RuntimePolicy) { p.Spec.SessionOverrides = v1alpha1.SessionOverridesDeny }
}

// codexOnly is config/samples/10_runtimepolicy_codex_only.yaml.
func codexOnly() *v1alpha1.RuntimePolicy {
	return policy("codex-only", 0, prov("openai", "codex"), deny())
}

type sopt func(*v1alpha1.AgentSession)

// session is an AgentSession of agent main in namespace agents.
func session(model string, opts ...sopt) *v1alpha1.AgentSession {
	s := &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "demo"},
		Spec: v1alpha1.AgentSessionSpec{
			AgentID: "main", SessionKey: "agent:main:demo", SessionID: "s-1", Model: model,
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func override(rt string) sopt {
	return func(s *v1alpha1.AgentSession) { s.Spec.RuntimeOverride = v1alpha1.RuntimeID(rt) }
}

func pinned(id string) sopt {
	return func(s *v1alpha1.AgentSession) { s.Status.AgentHarnessID = id }
}

// locked locks the session's model selection: only then does its pin take
// part in selection.
func locked() sopt {
	return func(s *v1alpha1.AgentSession) { s.Spec.ModelSelectionLocked = v1alpha1.ModelSelectionLocked }
}

// boundAt gives the session a native binding written in reset generation gen.
func boundAt(gen int64) sopt {
	return func(s *v1alpha1.AgentSession) {
		s.Status.NativeBinding = &v1alpha1.NativeBinding{ThreadID: "t-1", Pod: "codex-0", Generation: gen}
	}
}

// resetTo sets spec.resetGeneration (each /reset bumps it).
func resetTo(gen int64) sopt {
	return func(s *v1alpha1.AgentSession) { s.Spec.ResetGeneration = gen }
}

type aopt func(*wire.Attempt)

// attempt is an attempt for agent main without route facts.
func attempt(provider, modelID string, opts ...aopt) *wire.Attempt {
	a := &wire.Attempt{AgentID: "main", Provider: provider, ModelID: modelID}
	for _, o := range opts {
		o(a)
	}
	return a
}

func withRoute(mp wire.ModelProvider) aopt { return func(a *wire.Attempt) { a.ModelProvider = &mp } }

func withRetrySet(mps ...wire.ModelProvider) aopt {
	return func(a *wire.Attempt) { a.ModelProviders = mps }
}

func whatIfPin(id string) aopt { return func(a *wire.Attempt) { a.AgentHarnessID = id } }

func whatIfOverride(rt string) aopt {
	return func(a *wire.Attempt) { a.AgentHarnessRuntimeOverride = rt }
}

func tools(tp wire.ToolPolicy) aopt { return func(a *wire.Attempt) { a.ToolPolicy = &tp } }

type ropt func(*wire.ModelProvider)

// rt is a route without authored overrides and without a route policy.
func rt(api, baseURL string, opts ...ropt) wire.ModelProvider {
	mp := wire.ModelProvider{API: api, BaseURL: baseURL, RequestTransportOverrides: wire.TransportOverridesNone}
	for _, o := range opts {
		o(&mp)
	}
	return mp
}

func compat(ids ...string) ropt {
	return func(mp *wire.ModelProvider) { mp.RuntimePolicy = &wire.RouteRuntimePolicy{CompatibleIDs: ids} }
}

func overrides() ropt {
	return func(mp *wire.ModelProvider) { mp.RequestTransportOverrides = wire.TransportOverridesPresent }
}

func auth(source wire.AuthSource, mode string, req wire.AuthRequirement) ropt {
	return func(mp *wire.ModelProvider) {
		mp.PreparedAuth = &wire.PreparedAuth{Source: source, Mode: mode, Requirement: req}
	}
}

// codexRoute is the official Platform route that declares codex compatible.
func codexRoute(opts ...ropt) wire.ModelProvider {
	return rt(apiPlatform, platformURL, append([]ropt{compat("codex")}, opts...)...)
}

// acmeRoute is a route of provider acme.
func acmeRoute(opts ...ropt) wire.ModelProvider {
	return rt("acme-chat", "https://acme.example/v1", opts...)
}
