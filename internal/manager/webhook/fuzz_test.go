package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/platform/access"
	"github.com/openclaw/harness-operator/internal/platform/scheme"
	"github.com/openclaw/harness-operator/internal/policy/selection"
	"github.com/openclaw/harness-operator/internal/policy/toolpolicy"
	"github.com/openclaw/harness-operator/internal/testutil/crdschema"
)

// The fuzz targets of this file ask "is nothing the API server admits a
// panic later?". A fuzzed spec goes the way a create request goes: the CRD's
// defaults, the defaulting webhook, the defaults again, the CRD's schema and
// CEL rules (crdschema.Schema), then the validating webhook, here against a
// fake client holding a few objects and an authorizer that allows every
// review. What is admitted then goes through the code that reads such
// objects: visibility and selection (Select, with fuzzed objects in the
// snapshot), policy conflicts, the tool-policy rule and the names and labels
// of a managed harness's workload. A refusal must name a field.

const fuzzHarnessNS = "harness-ns"

// fuzzWorld is the cluster the validators read, and the fixed objects the
// consumers see next to the fuzzed one.
type fuzzWorld struct {
	crds      map[string]*crdschema.Schema
	reader    readers
	access    *access.Checker
	harnesses []*v1alpha1.AgentHarness
	policies  []*v1alpha1.RuntimePolicy
	sessions  []*v1alpha1.AgentSession
	attempts  []*wire.Attempt
	ctx       context.Context
}

func newFuzzWorld(f *testing.F) *fuzzWorld {
	f.Helper()
	w := &fuzzWorld{crds: map[string]*crdschema.Schema{}}
	for _, kind := range []string{"agentharnesses", "runtimepolicies", "agentsessions"} {
		crd, err := crdschema.Load("../../../config/crd/bases/harness.openclaw.dev_" + kind + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		w.crds[kind] = crd
	}
	ready := []metav1.Condition{{Type: v1alpha1.HarnessConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
	codex := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: fuzzHarnessNS, Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{HarnessID: "codex", Adapter: v1alpha1.AdapterCodexAppServer,
			External:          &v1alpha1.ExternalServer{URL: "wss://codex.example:4500", TokenSecretRef: v1alpha1.SecretKeyReference{Name: "t", Key: "token"}},
			AllowedNamespaces: &v1alpha1.AllowedNamespaces{From: v1alpha1.NamespacesFromAll}},
		Status: v1alpha1.AgentHarnessStatus{Conditions: ready},
	}
	deny := &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Spec: v1alpha1.RuntimePolicySpec{SessionOverrides: v1alpha1.SessionOverridesDeny,
			Providers: []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			Models:    []v1alpha1.ModelRuntimePolicy{{Ref: "anthropic/*", Runtime: "claude-cli"}}},
	}
	session := &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "k", SessionID: "s1", Model: "openai/gpt-5.5"},
	}
	w.harnesses, w.policies, w.sessions = []*v1alpha1.AgentHarness{codex}, []*v1alpha1.RuntimePolicy{deny}, []*v1alpha1.AgentSession{session}

	s, err := scheme.New()
	if err != nil {
		f.Fatal(err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fuzzHarnessNS}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{
			v1alpha1.AcceptHarnessesLabel(fuzzHarnessNS): v1alpha1.AcceptHarnessesLabelValue, "tier": "gold"}}},
		codex.DeepCopy(), deny.DeepCopy(), session.DeepCopy(),
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithIndex(&v1alpha1.AgentHarness{}, harnessIDField, harnessIDs).
		WithIndex(&v1alpha1.RuntimePolicy{}, policyRuntimeIDField, policyRuntimeIDs).WithInterceptorFuncs(interceptor.Funcs{
		// Every review allows: the requester's rights are the envtest
		// suite's subject; here they must not hide what comes after.
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if review, ok := obj.(*authorizationv1.SubjectAccessReview); ok {
				review.Status.Allowed = true
				return nil
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	w.reader, w.access = newReaders(c, c), access.NewChecker(c)
	w.ctx = admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UserInfo: authenticationv1.UserInfo{Username: "fuzz"}}})

	for _, body := range []string{
		`{}`,
		`{"agentId":"main","sessionKey":"k","sessionId":"s1","provider":"openai","modelId":"gpt-5.5","modelProvider":{"api":"openai-responses","baseUrl":"https://api.openai.com/v1","requestTransportOverrides":"none","preparedAuth":{"source":"profile","mode":"oauth","requirement":"subscription"}},"toolPolicy":{"profile":"coding","layers":[{"deny":["exec"]}]}}`,
		`{"provider":"acme","modelId":"m1","agentHarnessRuntimeOverride":"fuzzed","modelProviders":[{"requestTransportOverrides":"present","runtimePolicy":{"compatibleIds":["fuzzed","codex"]}}]}`,
		`{"modelId":"anthropic/claude-opus-5","agentHarnessId":"fuzzed","toolsAllow":[]}`,
	} {
		a, err := wire.DecodeAttempt(strings.NewReader(body))
		if err != nil {
			f.Fatalf("attempt %s: %v", body, err)
		}
		w.attempts = append(w.attempts, a)
	}
	return w
}

// admit runs obj through what a create request meets before it is stored;
// it reports whether obj was admitted, and fails when a refusal names no
// field.
func (w *fuzzWorld) admit(t *testing.T, kind string, obj runtime.Object, mutate func() error, validate func() error) bool {
	t.Helper()
	crd := w.crds[kind]
	if err := crd.Default(obj); err != nil {
		return false // not representable as the API server's JSON
	}
	if err := mutate(); err != nil {
		t.Fatalf("the defaulting webhook failed: %v", err)
	}
	if err := crd.Default(obj); err != nil {
		t.Fatalf("the defaulted object no longer converts: %v", err)
	}
	errs, err := crd.Validate(w.ctx, obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(errs) > 0 {
		return false
	}
	err = validate()
	if err == nil {
		return true
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		t.Fatalf("the validating webhook refused with an error that is not Invalid: %v", err)
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == "" {
			t.Fatalf("a refusal names no field: %v", err)
		}
	}
	return false
}

// selectAll runs Select over every session and attempt for a namespace's
// snapshot; every decision names a runtime or an error, never both.
func (w *fuzzWorld) selectAll(t *testing.T, harnesses []*v1alpha1.AgentHarness, policies []*v1alpha1.RuntimePolicy, sessions []*v1alpha1.AgentSession) {
	t.Helper()
	for _, ns := range []string{"team", fuzzHarnessNS} {
		labels := map[string]string{"tier": "gold", v1alpha1.AcceptHarnessesLabel(fuzzHarnessNS): v1alpha1.AcceptHarnessesLabelValue}
		for _, sess := range append([]*v1alpha1.AgentSession{nil}, sessions...) {
			snap, err := selection.SnapshotFor(harnesses, policies, ns, labels, sess)
			if err != nil {
				continue // an invalid selector fails the snapshot, visibly
			}
			for _, a := range w.attempts {
				d := selection.Select(snap, a)
				if (d.Error == nil) == (d.Runtime == "") {
					t.Fatalf("a decision with neither or both of runtime and error: %+v", d)
				}
			}
		}
	}
}

func decodeSpec(data []byte, spec any) bool {
	return json.Unmarshal(data, spec) == nil
}

// FuzzAgentHarnessAdmission: an AgentHarness the API server and the webhook
// admit is read without panic by selection, the tool-policy rule, the
// version floor and the workload's names and labels.
func FuzzAgentHarnessAdmission(f *testing.F) {
	w := newFuzzWorld(f)
	for _, seed := range []string{
		`{"adapter":"codex-app-server","external":{"url":"wss://127.0.0.1:4500","tokenSecretRef":{"name":"t","key":"token"}}}`,
		`{"harnessId":"fuzzed","adapter":"codex-app-server","minVersion":"0.170.0","appServer":{"image":"ghcr.io/openai/codex@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","replicas":2},"allowedNamespaces":{"from":"Selector","selector":{"matchLabels":{"tier":"gold"}}}}`,
		`{"harnessId":"fuzzed","adapter":"codex-app-server","support":{"providers":["acme"],"priority":7,"routePolicy":"MustBeDeclared","requestTransportOverrides":"Supported"},"autoSelection":{"mode":"ExplicitOnly","providers":["Acme"]},"conversationToolPolicySupport":"Exact","conversationToolPolicySafeDenyTools":["exec","bash"],"conversationToolPolicyNativeTools":["exec","read"],"external":{"url":"ws://localhost:1","tokenSecretRef":{"name":"t","key":"k"}}}`,
		`{"adapter":"codex-app-server","minVersion":"0.1.0","authBootstrap":"Host","external":{"url":"wss://u:p@h","tokenSecretRef":{"name":"t","key":"k"},"caBundle":"bm90IHBlbQ=="}}`,
		`{"harnessId":"codex","adapter":"codex-app-server","appServer":{"image":"c@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","storage":{"size":"1Gi"}},"allowedNamespaces":{"from":"Selector","selector":{"matchExpressions":[{"key":"tier","operator":"In","values":[]}]}}}`,
		`{"adapter":"codex-app-server","conversationToolPolicySupport":"Exact","conversationToolPolicySafeDenyTools":["exec","read"],"external":{"url":"wss://h","tokenSecretRef":{"name":"t","key":"k"}}}`,
		`{"adapter":"unknown"}`, `{}`, `null`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h := &v1alpha1.AgentHarness{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "AgentHarness"},
			ObjectMeta: metav1.ObjectMeta{Namespace: fuzzHarnessNS, Name: "fuzzed"}}
		if !decodeSpec(data, &h.Spec) {
			return
		}
		v := &harnessValidator{reader: w.reader, namespaces: []string{fuzzHarnessNS}, access: w.access, allowInsecureLoopback: true}
		admitted := w.admit(t, "agentharnesses", h,
			func() error { _, err := (&harnessDefaulter{}).Default(w.ctx, h); return err },
			func() error { _, err := v.ValidateCreate(w.ctx, h); return err })
		if !admitted {
			return
		}
		if h.Spec.Adapter == v1alpha1.AdapterCodexAppServer {
			if _, err := appserver.Floor(h.Spec.MinVersion); err != nil {
				t.Fatalf("an admitted minVersion is no version floor: %v", err)
			}
		}
		_ = objects.WorkloadName(h)
		_ = objects.TokenSecretName(h)
		_ = objects.SelectorLabels(h)
		_ = objects.ObjectLabels(h)
		_ = objects.Replicas(h)
		_ = toolpolicy.Evaluate(toolpolicy.Input{Layers: []toolpolicy.Layer{{Deny: []string{"exec"}}},
			Support: toolpolicy.Support(h.Spec.ConversationToolPolicySupport), SafeDenyTools: toolIDs(h.Spec.ConversationToolPolicySafeDenyTools),
			NativeTools: toolIDs(h.Spec.ConversationToolPolicyNativeTools)})
		ready := h.DeepCopy()
		ready.Status.Conditions = []metav1.Condition{{Type: v1alpha1.HarnessConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}
		w.selectAll(t, append([]*v1alpha1.AgentHarness{ready}, w.harnesses...), w.policies, w.sessions)
	})
}

func toolIDs(ids []v1alpha1.ToolID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// FuzzRuntimePolicyAdmission: a RuntimePolicy the API server and the webhook
// admit is read without panic by conflict detection, override checks and
// selection.
func FuzzRuntimePolicyAdmission(f *testing.F) {
	w := newFuzzWorld(f)
	for _, seed := range []string{
		`{"providers":[{"provider":"acme","runtime":"fuzzed","models":[{"id":"m1","runtime":"codex"}]}]}`,
		`{"namespaceSelector":{"matchLabels":{"tier":"gold"}},"models":[{"ref":"OpenAI/gpt-5.5","runtime":"PI"},{"ref":"acme/*","runtime":"auto"}],"sessionOverrides":"Deny"}`,
		`{"agents":[{"agentId":"main","models":[{"ref":"openai/gpt-5.5","runtime":"openclaw"}]}],"providers":[{"provider":"openai","runtime":"openclaw"}]}`,
		`{"agents":[{"agentId":"main","models":[{"ref":"google/gemini","runtime":"fuzzed"}]}],"providers":[{"provider":"google","runtime":"openclaw"}],"sessionOverrides":"Deny"}`,
		`{"namespaceSelector":{"matchExpressions":[{"key":"tier","operator":"Exists"}]},"models":[{"ref":"gpt-5.5","runtime":"codex-app-server"}]}`,
		`{"providers":[{"provider":"x"}]}`, `{}`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &v1alpha1.RuntimePolicy{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "RuntimePolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: "fuzzed"}}
		if !decodeSpec(data, &p.Spec) {
			return
		}
		v := &policyValidator{reader: w.reader}
		admitted := w.admit(t, "runtimepolicies", p,
			func() error { _, err := defaultPolicy(w.ctx, p); return err },
			func() error { _, err := v.ValidateCreate(w.ctx, p); return err })
		if !admitted {
			return
		}
		all := append([]*v1alpha1.RuntimePolicy{p}, w.policies...)
		_ = selection.FindConflicts(all, func(a, b *v1alpha1.RuntimePolicy) bool { return true })
		_ = selection.PolicyRuntimeIDs(p)
		for _, s := range w.sessions {
			_, _, _ = selection.OverrideDeniedBy(all, s.Spec.AgentID, s.Spec.Model, "fuzzed")
		}
		w.selectAll(t, w.harnesses, all, w.sessions)
	})
}

// FuzzAgentSessionAdmission: an AgentSession the API server and the webhook
// admit is read without panic by selection, which checks every attempt
// against it first.
func FuzzAgentSessionAdmission(f *testing.F) {
	w := newFuzzWorld(f)
	for _, seed := range []string{
		`{"agentId":"main","sessionKey":"k","sessionId":"s1","model":"openai/gpt-5.5"}`,
		`{"agentId":"main","sessionKey":"k","sessionId":"s1","model":"openai/gpt-5.5","runtimeOverride":"openclaw","modelSelectionLocked":"Locked"}`,
		`{"agentId":"ops","sessionKey":"k2","sessionId":"s2","model":"acme/m1","runtimeOverride":"PI","resetGeneration":3}`,
		`{"agentId":"main","sessionKey":"k","sessionId":"s1","model":"gpt-5.5"}`, `{}`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &v1alpha1.AgentSession{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "AgentSession"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "fuzzed"}}
		if !decodeSpec(data, &s.Spec) {
			return
		}
		v := &sessionValidator{reader: w.reader}
		admitted := w.admit(t, "agentsessions", s,
			func() error { _, err := defaultSession(w.ctx, s); return err },
			func() error { _, err := v.ValidateCreate(w.ctx, s); return err })
		if !admitted {
			return
		}
		_ = selection.SessionPin(s)
		w.selectAll(t, w.harnesses, w.policies, []*v1alpha1.AgentSession{s})
	})
}
