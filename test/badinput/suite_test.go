// Package badinput_test runs the bad-input corpus (testdata/dispatcher.yaml,
// testdata/crds.yaml) against the system as it is deployed: bin/dispatcher
// over TLS and bin/manager with its admission webhooks, each its own process,
// on envtest's real kube-apiserver (TokenReview, SubjectAccessReview, RBAC,
// CRD schemas and CEL rules), with a real `codex app-server` registered as an
// external AgentHarness and the stub model behind it. Each case states the
// error a user must see, its field path included, and that nothing of the
// refused input was kept: no run journaled, no model request, no object
// created or changed. docs/testing.md says how to add a case.
package badinput_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

const (
	// audience is the dispatcher's --token-audience; with
	// --require-token-audience it is the only one it accepts.
	audience    = "harness-dispatcher"
	serverToken = "badinput-capability-token-3e9a"
	testModel   = "openai/stub-model"
	gatewayRole = "harness-gateway-badinput"
	// session is the AgentSession the API cases address; okRun is the
	// finished turn of it whose turn token the answer cases present.
	session = "demo"
	okRun   = "run-ok"
	// policy is the suite's RuntimePolicy: openai to codex, overrides denied.
	policy = "codex-only"
)

// fixture is what both corpora run against.
type fixture struct {
	op   *testutil.Operator
	k8s  client.Client
	cs   kubernetes.Interface
	stub *stubmodel.Server
	// ns is a harness namespace of the manager: it holds the live harness,
	// the session, the ServiceAccounts, and the CRD cases' objects.
	ns string
	// outside is a namespace the manager serves no harness in.
	outside string
	// tokens are the bearer tokens the cases name (apiCase.Token).
	tokens map[string]string
	// turnToken is okRun's turn token (from its `selected` event).
	turnToken string
}

func TestBadInputIsRefusedAndLeavesNothingBehind(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv(codextest.EnvBin) == "" {
		t.Fatal("KUBEBUILDER_ASSETS and CODEX_BIN must be set: KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) go test ./test/badinput/")
	}
	f := start(t)
	t.Run("dispatcher API", f.runAPICorpus)
	t.Run("CRDs", f.runCRDCorpus)
}

func start(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	work := t.TempDir()
	stub, err := stubmodel.New()
	must(t, err)
	t.Cleanup(stub.Close)
	cdx, err := codextest.StartErr(t, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, WSToken: serverToken, Dir: filepath.Join(work, "codex"),
	})
	must(t, err)
	t.Cleanup(cdx.Kill)
	op, err := testutil.StartOperator(work, "--token-audience="+audience, "--require-token-audience")
	if err != nil {
		t.Fatalf("start the operator: %v%s", err, op.Logs())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(op.Logs())
		}
		if err := op.Stop(); err != nil {
			t.Error(err)
		}
	})
	f := &fixture{op: op, k8s: op.Env.Client, stub: stub, ns: testutil.ProcessNamespace(1), outside: "badinput-outside"}
	f.cs, err = kubernetes.NewForConfig(op.Env.Config)
	must(t, err)

	must(t, f.k8s.Create(ctx, testutil.NewPolicy(policy, testutil.ProviderRuntime("openai", "codex"), testutil.Enforcing())))
	must(t, f.k8s.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: gatewayRole},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}},
	}))
	for _, name := range []string{f.ns, f.outside} {
		must(t, f.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}))
	}
	must(t, f.k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "gateway"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: gatewayRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: f.ns, Name: "gateway"}},
	}))
	f.tokens = map[string]string{
		"gateway":       f.token(t, "gateway", audience),
		"nobody":        f.token(t, "nobody", audience),
		"apiAudience":   f.token(t, "gateway"),
		"otherAudience": f.token(t, "gateway", "someone-else"),
	}
	h, err := testutil.ExternalCodex(ctx, f.k8s, f.ns, cdx.URL, serverToken)
	must(t, err)
	_, err = testutil.WaitHarnessCondition(ctx, f.k8s, h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue, 60*time.Second)
	must(t, err)
	f.newSession(t)
	f.turnToken = f.runOK(t)
	return f
}

func (f *fixture) token(t *testing.T, name string, audiences ...string) string {
	t.Helper()
	tok, err := testutil.ServiceAccountToken(context.Background(), f.k8s, f.cs, f.ns, name, audiences...)
	must(t, err)
	return tok
}

// newSession creates the session and waits until the dispatcher knows it
// (its journal finalizer is on it): before that a case could see a 404
// SessionNotFound of a lagging cache instead of the refusal it is about.
func (f *fixture) newSession(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	must(t, f.k8s.Create(ctx, &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: session},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + session, SessionID: session + "-id", Model: testModel},
	}))
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := &v1alpha1.AgentSession{}
		must(t, f.k8s.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: session}, s))
		if slices.Contains(s.Finalizers, v1alpha1.JournalFinalizer) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dispatcher did not claim AgentSession %s/%s within 30s (finalizers %v)", f.ns, session, s.Finalizers)
		}
		time.Sleep(100 * time.Millisecond) // polling a fact (the finalizer) with a deadline
	}
}

// runOK runs okRun to its end and returns its turn token: the answer cases
// need a real turn token, which a body is checked only after.
func (f *fixture) runOK(t *testing.T) string {
	t.Helper()
	f.stub.When("badinput-ok", stubmodel.Text("ok"))
	r := f.call(t, http.MethodPost, f.sessionURL(session)+"/turns", f.tokens["gateway"],
		`{"runId":"`+okRun+`","prompt":"badinput-ok"}`, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("turn %s: %d %s", okRun, r.Status, r.Body)
	}
	var token string
	var last string
	must(t, sse.Read(bytes.NewReader(r.Body), func(e sse.Event) bool {
		last = e.Type
		if e.Type == wire.EventSelected {
			var sel wire.SelectedEvent
			must(t, json.Unmarshal(e.Data, &sel))
			token = sel.TurnToken
		}
		return true
	}))
	if token == "" || last != wire.EventResult {
		t.Fatalf("turn %s: no turn token or no result (last event %q): %s", okRun, last, r.Body)
	}
	return token
}

// --- requests ---

func (f *fixture) sessionURL(name string) string {
	return f.op.APIBase + "/v1/namespaces/" + f.ns + "/agentsessions/" + name
}

type reply = testutil.Reply

// call sends one request (testutil.Operator.Call) and fails the test if it
// gets no answer.
func (f *fixture) call(t *testing.T, method, url, token, body string, hdr map[string]string) reply {
	t.Helper()
	r, err := f.op.Call(method, url, token, body, hdr)
	must(t, err)
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
