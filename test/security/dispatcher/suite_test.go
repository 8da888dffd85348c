// Package dispatcher_test attacks the dispatcher as it is deployed: its own
// process (bin/dispatcher) with bin/manager against envtest's real
// kube-apiserver (TokenReview, SubjectAccessReview, RBAC, TokenRequest), a
// real `codex app-server` registered as an external AgentHarness and the
// stub model behind it, all on loopback. Every attack runs with its control
// (the same request without the attacking difference), which must succeed.
// Loops are bounded in count and time; latency figures are logged, never
// asserted.
package dispatcher_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authzv1 "k8s.io/api/authorization/v1"
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

// The dispatcher's limits under test: small, so the attacks stay bounded.
const (
	audience        = "harness-dispatcher"
	serverToken     = "security-e2e-capability-token-7c41"
	testModel       = "openai/stub-model"
	gatewayRole     = "harness-gateway-security"
	maxConnections  = 24
	readTimeout     = 2 * time.Second
	idleTimeout     = 3 * time.Second
	unverifiedRate  = 5
	unverifiedBurst = 20
)

// suite is what every attack uses.
type suite struct {
	op  *testutil.Operator
	k8s client.Client
	cs  kubernetes.Interface
	// ns holds the live harness, the session demo and the ServiceAccounts.
	ns string
	// gateway is a dispatcher-audience token of an account allowed turns
	// in ns; apiToken the same account's token for the API server's own
	// audience; nobody a dispatcher-audience token of an account without
	// a grant.
	gateway, apiToken, nobody string
	metricsAddr               string
	stub                      *stubmodel.Server
	// namespaces counts the namespaces made so far (testutil.ProcessNamespace).
	namespaces int
}

func TestDispatcherUnderAttack(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv(codextest.EnvBin) == "" {
		t.Fatal("KUBEBUILDER_ASSETS and CODEX_BIN must be set: KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) go test ./test/security/dispatcher/")
	}
	s := start(t)
	// The floods come last: the rate limit's budget of the loopback
	// address is spent by them.
	t.Run("tokens", s.testTokens)
	t.Run("token lifetime", s.testTokenLifetime)
	t.Run("rights the API server cannot evaluate", s.testUnevaluatedRights)
	t.Run("proxy header", s.testProxyHeader)
	t.Run("another run's turn token", s.testTurnTokens)
	t.Run("delegated execution", s.testDelegation)
	t.Run("bodies", s.testBodies)
	t.Run("server errors carry no addresses or paths", s.testRedactedServerErrors)
	t.Run("metrics and probes", s.testMetricsAndProbes)
	t.Run("slow clients", s.testSlowClients)
	t.Run("a stream outlives the read timeout", s.testLongStream)
	t.Run("review amplification by a token without grants", s.testReviewAmplification)
	t.Run("idle connection flood", s.testConnectionFlood)
	t.Run("random token flood", s.testTokenFlood)
}

func start(t *testing.T) *suite {
	t.Helper()
	work := t.TempDir()
	stub, err := stubmodel.New()
	must(t, err)
	t.Cleanup(stub.Close)
	cdx, err := codextest.StartErr(t, codextest.Options{
		ProviderURL: stub.BaseURL(), Transport: codextest.WebSocket, WSToken: serverToken, Dir: filepath.Join(work, "codex"),
	})
	must(t, err)
	t.Cleanup(cdx.Kill)
	metricsAddr, err := testutil.FreeAddr()
	must(t, err)
	op, err := testutil.StartOperator(work,
		"--token-audience="+audience, "--require-token-audience",
		fmt.Sprintf("--max-connections=%d", maxConnections),
		"--read-timeout="+readTimeout.String(), "--idle-timeout="+idleTimeout.String(),
		fmt.Sprintf("--auth-unverified-rate=%d", unverifiedRate), fmt.Sprintf("--auth-unverified-burst=%d", unverifiedBurst),
		"--metrics-bind-address="+metricsAddr)
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
	s := &suite{op: op, k8s: op.Env.Client, metricsAddr: metricsAddr, stub: stub}
	s.cs, err = kubernetes.NewForConfig(op.Env.Config)
	must(t, err)
	ctx := context.Background()
	must(t, s.k8s.Create(ctx, &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "codex-only"},
		Spec: v1alpha1.RuntimePolicySpec{
			Providers:        []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}},
			SessionOverrides: v1alpha1.SessionOverridesDeny,
		},
	}))
	must(t, s.k8s.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: gatewayRole},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}},
	}))
	s.ns = s.namespace(t, "attack")
	s.gateway = s.token(t, s.ns, "gateway", audience)
	s.apiToken = s.token(t, s.ns, "gateway")
	s.nobody = s.token(t, s.ns, "nobody", audience)
	h, err := testutil.ExternalCodex(ctx, s.k8s, s.ns, cdx.URL, serverToken)
	must(t, err)
	_, err = testutil.WaitHarnessCondition(ctx, s.k8s, h, v1alpha1.HarnessConditionReady, metav1.ConditionTrue, 60*time.Second)
	must(t, err)
	s.session(t, s.ns, "demo")
	return s
}

// namespace creates a namespace where the suite's gateway account (of
// s.ns, or of this namespace when it is the first) may run turns.
func (s *suite) namespace(t *testing.T, prefix string) string {
	t.Helper()
	ctx := context.Background()
	// The manager serves only its --harness-namespaces: the suite's
	// namespaces are the process suites' list, in order.
	s.namespaces++
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testutil.ProcessNamespace(s.namespaces),
		Labels: map[string]string{"harness.openclaw.dev/test-purpose": prefix}}}
	must(t, s.k8s.Create(ctx, nsObj))
	saNS := s.ns
	if saNS == "" {
		saNS = nsObj.Name
	}
	must(t, s.k8s.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: nsObj.Name, Name: "gateway"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: gatewayRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: saNS, Name: "gateway"}},
	}))
	return nsObj.Name
}

func (s *suite) token(t *testing.T, ns, name string, audiences ...string) string {
	t.Helper()
	tok, err := testutil.ServiceAccountToken(context.Background(), s.k8s, s.cs, ns, name, audiences...)
	must(t, err)
	return tok
}

func (s *suite) session(t *testing.T, ns, name string) {
	t.Helper()
	must(t, s.k8s.Create(context.Background(), &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + name, SessionID: name + "-id", Model: testModel},
	}))
}

// --- requests ---

func (s *suite) url(ns, session, suffix string) string {
	return s.op.APIBase + "/v1/namespaces/" + ns + "/agentsessions/" + session + suffix
}

type reply = testutil.Reply

// call sends one request (testutil.Operator.Call) and fails the test if it
// gets no answer.
func (s *suite) call(t *testing.T, method, url, token, body string, hdr map[string]string) reply {
	t.Helper()
	r, err := s.op.Call(method, url, token, body, hdr)
	must(t, err)
	return r
}

const decideBody = `{"prompt":"hi"}`

// decide is the cheapest authorized request: POST …/decide on demo.
func (s *suite) decide(t *testing.T, token string, hdr map[string]string) reply {
	t.Helper()
	return s.call(t, http.MethodPost, s.url(s.ns, "demo", "/decide"), token, decideBody, hdr)
}

// wantError checks a refusal's status and code, and that its message
// contains every word of names.
func wantError(t *testing.T, what string, r reply, status int, code wire.ErrorCode, names ...string) wire.Error {
	t.Helper()
	var e wire.Error
	if err := json.Unmarshal(r.Body, &e); err != nil || r.Status != status || e.Code != code {
		t.Fatalf("%s: %d %s, want %d %s", what, r.Status, r.Body, status, code)
	}
	for _, n := range names {
		if !strings.Contains(e.Message, n) {
			t.Fatalf("%s: message %q does not name %q", what, e.Message, n)
		}
	}
	t.Logf("attack %s: refused %d %s: %s", what, r.Status, e.Code, e.Message)
	return e
}

func wantOK(t *testing.T, what string, r reply) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("control %s: %d %s, want 200", what, r.Status, r.Body)
	}
}

// turn runs a turn on ns/session and returns its events once it ended.
func (s *suite) turn(t *testing.T, ns, session, runID string) []sse.Event {
	t.Helper()
	return s.turnWith(t, ns, session, runID, "hello")
}

func (s *suite) turnWith(t *testing.T, ns, session, runID, prompt string) []sse.Event {
	t.Helper()
	r := s.call(t, http.MethodPost, s.url(ns, session, "/turns"), s.gateway, fmt.Sprintf(`{"runId":%q,"prompt":%q}`, runID, prompt), nil)
	if r.Status != http.StatusOK {
		t.Fatalf("turn %s: %d %s", runID, r.Status, r.Body)
	}
	var evs []sse.Event
	must(t, sse.Read(bytes.NewReader(r.Body), func(e sse.Event) bool { evs = append(evs, e); return true }))
	return evs
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// eventually polls cond until it holds, and fails the test with cond's last
// account of what it saw when within passes first. A spec waits with it for
// positive evidence that a change was seen, never for a fixed time.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; last: %s", what, within, last)
		}
		<-tick.C
	}
}

// rights is the API server's SubjectAccessReview of the service account
// saNS/sa (its user and groups, as a TokenReview of its token gives them)
// for attrs or, when attrs is nil, for nonResource. It asks the question
// the dispatcher (and the metrics filter) ask, without their verdict
// caches: a spec waits on it until the API server's RBAC has seen an RBAC
// change, before the first request whose verdict the dispatcher would
// cache (a denial for --auth-cache-ttl, the metrics filter's for 30 s).
func (s *suite) rights(t *testing.T, saNS, sa string, attrs *authzv1.ResourceAttributes, nonResource *authzv1.NonResourceAttributes) authzv1.SubjectAccessReviewStatus {
	t.Helper()
	r, err := s.cs.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authzv1.SubjectAccessReview{
		Spec: authzv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + saNS + ":" + sa,
			Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + saNS, "system:authenticated"},
			ResourceAttributes:    attrs,
			NonResourceAttributes: nonResource,
		},
	}, metav1.CreateOptions{})
	must(t, err)
	return r.Status
}

// turnRights is rights for verb on agentsessions/turns in ns.
func (s *suite) turnRights(t *testing.T, saNS, sa, verb, ns string) authzv1.SubjectAccessReviewStatus {
	t.Helper()
	return s.rights(t, saNS, sa, &authzv1.ResourceAttributes{
		Namespace: ns, Verb: verb, Group: httpapi.APIGroup, Resource: httpapi.Resource, Subresource: httpapi.SubresourceTurns,
	}, nil)
}
