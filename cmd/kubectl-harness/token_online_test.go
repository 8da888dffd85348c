package main

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// grant creates a Role ns/name with rules and binds it to subject.
func grant(t *testing.T, c client.Client, ns, name string, rules []rbacv1.PolicyRule, subject rbacv1.Subject) {
	t.Helper()
	if err := c.Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}); err != nil {
		t.Fatal(err)
	}
}

// serviceAccountKubeconfig creates ServiceAccount ns/name and writes a
// kubeconfig whose credential is a bearer token of it (the API server's
// audience): the kind of credential that must never reach the dispatcher.
func serviceAccountKubeconfig(t *testing.T, te *testutil.Env, ns, name string) (path, token string) {
	t.Helper()
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(te.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := te.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"envtest": {Server: te.Config.Host, CertificateAuthorityData: te.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: tok.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: "envtest", AuthInfo: name}},
		CurrentContext: name,
	}, path); err != nil {
		t.Fatal(err)
	}
	return path, tok.Status.Token
}

// TestDispatcherReceivesOnlyAShortLivedServiceAccountToken runs `transcript`
// as a user whose kubeconfig holds a bearer token that the dispatcher would
// accept (the user has the turn grant too), on both paths — a dispatcher URL
// and the API server's service proxy — and checks what the dispatcher
// received: never the kubeconfig's token, but a harness-cli token bound to
// the dispatcher's audience (the API server itself does not accept it),
// valid for at most 10 minutes, as the CLI announces on stderr. A user who
// may not request that token is refused before any request reaches the
// dispatcher, with the permission and the ServiceAccount named; a plain
// http:// URL is refused before any token is requested.
func TestDispatcherReceivesOnlyAShortLivedServiceAccountToken(t *testing.T) {
	t.Parallel() // a control plane of its own (startCluster)
	te, adminKubeconfig := startCluster(t)
	c := te.Client
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(te.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns, dns = "agents", defaultDispatcherNamespace
	for _, n := range []string{ns, dns} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Create(ctx, &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s1"},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:s1", SessionID: "s1", Model: "openai/gpt-5.5"},
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: defaultServiceAccount}}); err != nil {
		t.Fatal(err)
	}
	turns := []rbacv1.PolicyRule{{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}}
	grant(t, c, ns, "harness-cli-turns", turns, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: defaultServiceAccount})

	// alice: a bearer-token kubeconfig with the chart's CLI grants, and the
	// turn grant itself, so a forwarded kubeconfig token would be accepted
	// and only the recorded header can tell.
	aliceKubeconfig, aliceToken := serviceAccountKubeconfig(t, te, ns, "alice")
	alice := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "alice"}
	grant(t, c, ns, "alice", append([]rbacv1.PolicyRule{
		{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{defaultServiceAccount}, Verbs: []string{"create"}},
	}, turns...), alice)
	grant(t, c, dns, "alice", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"services/proxy"}, ResourceNames: []string{"https:harness-operator-dispatcher:https"}, Verbs: []string{"create", "get"}},
	}, alice)
	// bob: the same, except the token request.
	bobKubeconfig, _ := serviceAccountKubeconfig(t, te, ns, "bob")
	grant(t, c, ns, "bob", append([]rbacv1.PolicyRule{
		{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions"}, Verbs: []string{"get"}},
	}, turns...), rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "bob"})

	jrnl, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = jrnl.Close() }()
	eng := engine.New(c, c, jrnl, engine.Options{})
	defer eng.Close()
	h, err := httpapi.NewHandler(httpapi.Config{Engine: eng, Store: jrnl, Sessions: c, Authorizer: httpapi.NewKubeAuthorizer(cs, defaultAudience)})
	if err != nil {
		t.Fatal(err)
	}
	rec := &headerRecorder{next: h}
	srv := httptest.NewTLSServer(rec)
	defer srv.Close()
	caPath := filepath.Join(t.TempDir(), "dispatcher-ca.pem")
	if err := os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	exposeThroughServiceProxy(t, c, dns, "harness-operator-dispatcher",
		map[string]string{"app.kubernetes.io/name": "harness-operator", "app.kubernetes.io/component": "dispatcher"}, srv.URL)

	const announced = "using system:serviceaccount:agents:harness-cli (token for audience harness-dispatcher, valid 10m)\n"
	// checkToken asserts the dispatcher got a harness-cli token for its
	// audience, not alice's, that the API server refuses for itself.
	checkToken := func(path, header string) {
		t.Helper()
		token, ok := strings.CutPrefix(header, "Bearer ")
		if !ok || token == "" {
			t.Fatalf("%s: the dispatcher received %q", path, header)
		}
		if token == aliceToken {
			t.Fatalf("%s: the dispatcher received the kubeconfig's token", path)
		}
		for _, tc := range []struct {
			audiences []string
			want      bool
		}{{[]string{defaultAudience}, true}, {nil, false}} {
			tr, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: tc.audiences}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Status.Authenticated != tc.want || (tc.want && tr.Status.User.Username != "system:serviceaccount:agents:harness-cli") {
				t.Fatalf("%s: TokenReview for audiences %v of the received token: %+v; want authenticated %t as harness-cli", path, tc.audiences, tr.Status, tc.want)
			}
		}
		if life := tokenLifetimeOf(t, token); life > 600 {
			t.Fatalf("%s: the received token lives %ds, want at most 600", path, life)
		}
	}

	// Direct URL: Authorization.
	direct := []string{envDispatcherURL + "=" + srv.URL, envDispatcherCA + "=" + caPath}
	_, errOut, exit := runCLI(t, direct, "transcript", "s1", "--kubeconfig="+aliceKubeconfig, "-n", ns)
	authz, proxyAuth, n := rec.last()
	if exit != exitOK || n != 1 || proxyAuth != "" {
		t.Fatalf("direct transcript: exit %d, stderr %q, dispatcher requests %d, %s %q", exit, errOut, n, wire.ProxyAuthorizationHeader, proxyAuth)
	}
	checkToken("direct URL", authz)
	if errOut != announced {
		t.Fatalf("direct transcript: stderr %q, want %q", errOut, announced)
	}

	// Service proxy: X-Harness-Authorization; the API server authenticated
	// alice's token and removed Authorization.
	_, errOut, exit = runCLI(t, noDispatcherEnv, "transcript", "s1", "--kubeconfig="+aliceKubeconfig, "-n", ns)
	authz, proxyAuth, n = rec.last()
	if exit != exitOK || n != 2 || authz != "" {
		t.Fatalf("proxied transcript: exit %d, stderr %q, dispatcher requests %d, Authorization %q", exit, errOut, n, authz)
	}
	checkToken("service proxy", proxyAuth)
	if errOut != announced {
		t.Fatalf("proxied transcript: stderr %q, want %q", errOut, announced)
	}

	// Refusals, each next to its control above: no request reaches the
	// dispatcher.
	for _, tc := range []struct {
		name     string
		env      []string
		args     []string
		wantExit int
		want     []string
	}{
		{"bob may not request the token (direct)", direct, []string{"--kubeconfig=" + bobKubeconfig}, exitFailure,
			[]string{"you may not request a token for ServiceAccount agents/harness-cli", "`create` on serviceaccounts/token (resourceName harness-cli) in namespace agents", "--service-account"}},
		{"bob may not request the token (service proxy)", noDispatcherEnv, []string{"--kubeconfig=" + bobKubeconfig, "--dispatcher-service", "harness-operator-dispatcher"}, exitFailure,
			[]string{"you may not request a token for ServiceAccount agents/harness-cli", "`create` on serviceaccounts/token"}},
		{"alice may not request another ServiceAccount's token", direct, []string{"--kubeconfig=" + aliceKubeconfig, "--service-account", "alice"}, exitFailure,
			[]string{"you may not request a token for ServiceAccount agents/alice", "(resourceName alice)"}},
		{"the ServiceAccount does not exist", direct, []string{"--kubeconfig=" + adminKubeconfig, "--service-account", "missing"}, exitFailure,
			[]string{"ServiceAccount agents/missing does not exist", "cli.serviceAccountNamespaces", "--service-account"}},
		{"a plain http:// URL", []string{envDispatcherURL + "=" + strings.Replace(srv.URL, "https://", "http://", 1)}, []string{"--kubeconfig=" + aliceKubeconfig}, exitBadInput,
			[]string{"$" + envDispatcherURL, "plain http:// is refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, exit := runCLI(t, tc.env, append([]string{"transcript", "s1", "-n", ns}, tc.args...)...)
			if exit != tc.wantExit {
				t.Fatalf("exit %d, want %d; stderr %q", exit, tc.wantExit, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
			if strings.Contains(errOut, "using system:serviceaccount") {
				t.Errorf("stderr announces a token: %q", errOut)
			}
			if _, _, n := rec.last(); n != 2 {
				t.Errorf("the dispatcher received %d requests, want still 2", n)
			}
		})
	}
}

// tokenLifetimeOf reads exp - iat of a JWT (already authenticated by a
// TokenReview; only its claims are read here).
func tokenLifetimeOf(t *testing.T, token string) int64 {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Exp, Iat int64 }
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims.Exp - claims.Iat
}
