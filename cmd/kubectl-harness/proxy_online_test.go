package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/httpapi"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// exposeThroughServiceProxy makes the kube-apiserver's service proxy for
// Service ns/name (port "https") reach the server listening on srvURL
// (a 127.0.0.1 httptest server). The API server proxies a Service to one of
// its EndpointSlices' endpoints, and only to an endpoint whose targetRef is
// a Pod of the same namespace listing the endpoint's address in
// status.podIPs (ResourceLocation in pkg/registry/core/service/storage). An
// IPv4 or IPv6 EndpointSlice may not hold a loopback address (validation
// refuses 127.0.0.0/8), and the test must not listen elsewhere; an FQDN
// EndpointSlice's address is validated as a DNS name only, and "127.0.0.1"
// is a valid one, while Pod status accepts any IP. So the test writes what a
// kubelet and the EndpointSlice controller would write in a cluster: a Pod
// whose status says 127.0.0.1, and an FQDN slice whose endpoint points at
// it. The API server then dials 127.0.0.1:<port> itself — the proxying,
// authentication, authorization and header handling under test are the API
// server's own. If a later API server refuses this, the test fails (it must
// not be skipped).
func exposeThroughServiceProxy(t *testing.T, c client.Client, ns, name string, lbls map[string]string, srvURL string) {
	t.Helper()
	ctx := t.Context()
	u, err := url.Parse(srvURL)
	if err != nil {
		t.Fatal(err)
	}
	host, portStr, err := net.SplitHostPort(u.Host)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("want a 127.0.0.1 server, got %s", srvURL)
	}
	port, _ := strconv.Atoi(portStr)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-0"},
		Spec: corev1.PodSpec{
			Containers:                   []corev1.Container{{Name: "dispatcher", Image: "dispatcher"}},
			AutomountServiceAccountToken: ptr.To(false),
		},
	}
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("create Pod: %v", err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host, PodIPs: []corev1.PodIP{{IP: host}}}
	if err := c.Status().Update(ctx, pod); err != nil {
		t.Fatalf("Pod status: %v", err)
	}
	if err := c.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: dispatcherPortName, Port: 443, TargetPort: intstr.FromInt32(int32(port))}}},
	}); err != nil {
		t.Fatalf("create Service: %v", err)
	}
	if err := c.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-fqdn", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{host},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod.Name},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(dispatcherPortName), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}); err != nil {
		t.Fatalf("create EndpointSlice: %v", err)
	}
}

// noDispatcherEnv blanks the dispatcher variables, so the CLI takes the
// service proxy whatever the test's environment holds.
var noDispatcherEnv = []string{envDispatcherURL + "=", envDispatcherCA + "=", envDispatcherNamespace + "="}

// headerRecorder wraps a handler and keeps the last request's auth headers.
type headerRecorder struct {
	next             http.Handler
	mu               sync.Mutex
	authz, proxyAuth string
	requests         int
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.authz, h.proxyAuth = r.Header.Get("Authorization"), r.Header.Get(wire.ProxyAuthorizationHeader)
	h.requests++
	h.mu.Unlock()
	h.next.ServeHTTP(w, r)
}

func (h *headerRecorder) last() (string, string, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.authz, h.proxyAuth, h.requests
}

// TestDispatcherThroughServiceProxy runs `transcript` and `turn` without a
// dispatcher URL against a real kube-apiserver: the CLI finds the labeled
// dispatcher Service, goes through the API server's service proxy with the
// kubeconfig's client certificate, and a real httpapi.Handler
// authenticates the harness-cli token (dispatcher audience) it receives in
// X-Harness-Authorization (TokenReview and SubjectAccessReview on the same
// API server). The CLI user is not an administrator: it holds exactly the
// RBAC the README lists.
func TestDispatcherThroughServiceProxy(t *testing.T) {
	t.Parallel() // a control plane of its own (startCluster)
	te, _ := startCluster(t)
	c := te.Client
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(te.Config)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	const ns, dns = "agents", defaultDispatcherNamespace
	for _, n := range []string{ns, dns} {
		must(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	must(c.Create(ctx, &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s1"},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:s1", SessionID: "s1", Model: "openai/gpt-5.5"},
	}))
	// harness-cli may run turns and read them (the gateway grant).
	must(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: defaultServiceAccount}}))
	grant(t, c, ns, "harness-turns", []rbacv1.PolicyRule{{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}}},
		rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: defaultServiceAccount})
	// The CLI user: reads sessions, requests harness-cli tokens, finds and
	// uses the dispatcher Service's proxy (README, "through the API server").
	user := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "cli-user"}
	grant(t, c, ns, "cli-user", []rbacv1.PolicyRule{
		{APIGroups: []string{httpapi.APIGroup}, Resources: []string{"agentsessions"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{defaultServiceAccount}, Verbs: []string{"create"}},
	}, user)
	grant(t, c, dns, "cli-user", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list"}},
		{APIGroups: []string{""}, Resources: []string{"services/proxy"}, ResourceNames: []string{"https:harness-operator-dispatcher:https"}, Verbs: []string{"create", "get"}},
	}, user)
	au, err := te.AddUser(envtest.User{Name: "cli-user"})
	must(err)
	kcBytes, err := au.KubeConfig()
	must(err)
	kubeconfig := filepath.Join(t.TempDir(), "cli-user.kubeconfig")
	must(os.WriteFile(kubeconfig, kcBytes, 0o600))
	kc := "--kubeconfig=" + kubeconfig

	// A real dispatcher handler (engine and journal; no harness: a turn is
	// refused by the engine with a turn's error code after authorization).
	jrnl, err := journal.Open(t.TempDir(), journal.Options{})
	must(err)
	defer func() { _ = jrnl.Close() }()
	eng := engine.New(c, c, jrnl, engine.Options{})
	defer eng.Close()
	h, err := httpapi.NewHandler(httpapi.Config{Engine: eng, Store: jrnl, Sessions: c, Authorizer: httpapi.NewKubeAuthorizer(cs, "harness-dispatcher")})
	must(err)
	rec := &headerRecorder{next: h}
	srv := httptest.NewTLSServer(rec)
	defer srv.Close()

	// Discovery: no labeled Service yet.
	_, errOut, exit := runCLI(t, noDispatcherEnv, "transcript", "s1", kc, "-n", ns)
	if exit != exitBadInput || !strings.Contains(errOut, `no Service in namespace "harness-operator-system" has the labels app.kubernetes.io/component=dispatcher,app.kubernetes.io/name=harness-operator`) ||
		!strings.Contains(errOut, "--dispatcher <url>") {
		t.Fatalf("no Service: exit %d, stderr %q", exit, errOut)
	}
	// --dispatcher-ca has no meaning through the proxy: refused, named.
	_, errOut, exit = runCLI(t, noDispatcherEnv, "transcript", "s1", kc, "-n", ns, "--dispatcher-ca", "/nonexistent.pem")
	if exit != exitBadInput || !strings.Contains(errOut, "--dispatcher-ca applies to a dispatcher URL") {
		t.Fatalf("--dispatcher-ca through the proxy: exit %d, stderr %q", exit, errOut)
	}

	dispatcherLabels := map[string]string{"app.kubernetes.io/name": "harness-operator", "app.kubernetes.io/component": "dispatcher"}
	exposeThroughServiceProxy(t, c, dns, "harness-operator-dispatcher", dispatcherLabels, srv.URL)

	// A read (GET, `get` on services/proxy) reaches the handler, which
	// authenticates the forwarded header: Authorization never arrives.
	out, errOut, exit := runCLI(t, noDispatcherEnv, "transcript", "s1", kc, "-n", ns)
	authz, proxyAuth, n := rec.last()
	if exit != exitOK || out != "" || n != 1 {
		t.Fatalf("transcript through the proxy: exit %d, stdout %q, stderr %q, dispatcher requests %d", exit, out, errOut, n)
	}
	if authz != "" || !strings.HasPrefix(proxyAuth, "Bearer ") {
		t.Fatalf("the dispatcher saw Authorization %q and %s %q; want only the latter", authz, wire.ProxyAuthorizationHeader, proxyAuth)
	}
	// A turn (POST, `create` on services/proxy): authorized by the handler,
	// then refused by the engine (no policy, no harness: the embedded
	// runtime), whose JSON answer the proxy passes through: exit 3.
	_, errOut, exit = runCLI(t, noDispatcherEnv, "turn", "s1", kc, "-n", ns, "--prompt", "hello")
	if _, _, n = rec.last(); exit != exitFailClosed || n != 2 || !strings.Contains(errOut, "error: EmbeddedRuntimeSelected") || !strings.Contains(errOut, "(HTTP 409") {
		t.Fatalf("turn through the proxy: exit %d, stderr %q, dispatcher requests %d", exit, errOut, n)
	}

	// Without the header the dispatcher answers 401, and its JSON body comes
	// back through the proxy unchanged.
	userCfg := restConfigOf(t, kubeconfig)
	hc, err := rest.HTTPClientFor(userCfg)
	must(err)
	base := proxyBase(t, userCfg, dns, "harness-operator-dispatcher")
	resp, err := hc.Get(base + "/v1/namespaces/agents/agentsessions/s1/transcript")
	must(err)
	var ae wire.Error
	err = json.NewDecoder(resp.Body).Decode(&ae)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || err != nil || ae.Code != wire.CodeUnauthorized ||
		!strings.Contains(ae.Message, wire.ProxyAuthorizationHeader) {
		t.Fatalf("no header: %d %+v (%v)", resp.StatusCode, ae, err)
	}

	// Two labeled Services: named in the error; --dispatcher-service picks.
	exposeThroughServiceProxy(t, c, dns, "other-dispatcher", dispatcherLabels, srv.URL)
	_, errOut, exit = runCLI(t, noDispatcherEnv, "transcript", "s1", kc, "-n", ns)
	if exit != exitBadInput || !strings.Contains(errOut, `2 Services in namespace "harness-operator-system" have the labels`) ||
		!strings.Contains(errOut, "(harness-operator-dispatcher, other-dispatcher)") || !strings.Contains(errOut, "--dispatcher-service") {
		t.Fatalf("two Services: exit %d, stderr %q", exit, errOut)
	}
	if _, errOut, exit = runCLI(t, noDispatcherEnv, "transcript", "s1", kc, "-n", ns, "--dispatcher-service", "harness-operator-dispatcher"); exit != exitOK {
		t.Fatalf("--dispatcher-service: exit %d, stderr %q", exit, errOut)
	}
	// The user may not proxy to the other Service: the API server answers
	// (a Status, not the dispatcher's JSON), and the CLI says which.
	_, errOut, exit = runCLI(t, noDispatcherEnv, "transcript", "s1", kc, "-n", ns, "--dispatcher-service", "other-dispatcher")
	if exit != exitFailure || !strings.Contains(errOut, "the API server answered 403") || !strings.Contains(errOut, `"services/proxy"`) {
		t.Fatalf("no services/proxy grant: exit %d, stderr %q", exit, errOut)
	}
	// On-call (config/rbac/oncall_role.yaml, bound cluster-wide) with a
	// bearer-token kubeconfig. That token never goes to the dispatcher: the
	// CLI needs a ServiceAccount token, and the role grants no
	// serviceaccounts/token, so on-call is refused, the permission named.
	// With `create` on the token of a ServiceAccount that holds the on-call
	// role (harness-oncall here), --service-account picks it and the
	// transcript is read. The role has no `list` on Services, so it names
	// the Service.
	roleYAML, err := os.ReadFile("../../config/rbac/oncall_role.yaml")
	must(err)
	oncall := &rbacv1.ClusterRole{}
	must(yaml.UnmarshalStrict(roleYAML, oncall))
	must(c.Create(ctx, oncall))
	tokenKubeconfig, _ := serviceAccountKubeconfig(t, te, ns, "oncall")
	must(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "harness-oncall"}}))
	must(c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "oncall"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: oncall.Name},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "oncall"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "harness-oncall"},
		},
	}))
	_, _, before := rec.last()
	_, errOut, exit = runCLI(t, noDispatcherEnv, "transcript", "s1", "--kubeconfig="+tokenKubeconfig, "-n", ns, "--dispatcher-service", "harness-operator-dispatcher")
	if _, _, n = rec.last(); exit != exitFailure || n != before || !strings.Contains(errOut, "serviceaccounts/token (resourceName harness-cli)") {
		t.Fatalf("on-call without a token grant: exit %d, stderr %q, dispatcher requests %d -> %d", exit, errOut, before, n)
	}
	grant(t, c, ns, "oncall-token", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{"harness-oncall"}, Verbs: []string{"create"}},
	}, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "oncall"})
	oncallSA := "--service-account=harness-oncall"
	if _, errOut, exit = runCLI(t, noDispatcherEnv, "transcript", "s1", "--kubeconfig="+tokenKubeconfig, "-n", ns, oncallSA,
		"--dispatcher-service", "harness-operator-dispatcher"); exit != exitOK || !strings.Contains(errOut, "using system:serviceaccount:agents:harness-oncall") {
		t.Fatalf("on-call transcript: exit %d, stderr %q", exit, errOut)
	}
	_, errOut, exit = runCLI(t, noDispatcherEnv, "turn", "s1", "--kubeconfig="+tokenKubeconfig, "-n", ns, "--prompt", "x", oncallSA,
		"--dispatcher-service", "harness-operator-dispatcher")
	if exit != exitFailure || !strings.Contains(errOut, "the API server answered 403") {
		t.Fatalf("on-call turn (no create on services/proxy): exit %d, stderr %q", exit, errOut)
	}
	_, errOut, exit = runCLI(t, noDispatcherEnv, "transcript", "s1", "--kubeconfig="+tokenKubeconfig, "-n", ns, oncallSA)
	if exit != exitFailure || !strings.Contains(errOut, "forbidden") || !strings.Contains(errOut, "name it with --dispatcher-service") {
		t.Fatalf("on-call lookup without list: exit %d, stderr %q", exit, errOut)
	}

	// Another namespace without a dispatcher, by environment variable.
	_, errOut, exit = runCLI(t, []string{envDispatcherURL + "=", envDispatcherCA + "=", envDispatcherNamespace + "=agents"}, "transcript", "s1", kc, "-n", ns)
	if exit != exitFailure || !strings.Contains(errOut, `list Services in namespace "agents"`) || !strings.Contains(errOut, "--dispatcher-service") {
		t.Fatalf("%s without list permission: exit %d, stderr %q", envDispatcherNamespace, exit, errOut)
	}
}

// proxyBase is the service-proxy URL of Service ns/name's https port.
func proxyBase(t *testing.T, cfg *rest.Config, ns, name string) string {
	t.Helper()
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(u.String(), "/") + "/api/v1/namespaces/" + ns + "/services/https:" + name + ":https/proxy"
}

// restConfigOf loads a kubeconfig file.
func restConfigOf(t *testing.T, path string) *rest.Config {
	t.Helper()
	kc, err := (&kubeFlags{kubeconfig: path}).client()
	if err != nil {
		t.Fatal(err)
	}
	return kc.cfg
}

// TestServiceProxyFacts pins what the design relies on, on the real
// kube-apiserver: with a bearer token the API server deletes Authorization
// before proxying (hence X-Harness-Authorization) and forwards other request
// headers (Last-Event-ID); it passes the backend's status, Retry-After and
// body through; it streams text/event-stream without holding events back;
// and it connects to an https backend without verifying its certificate
// (httptest's certificate is trusted by nothing here).
func TestServiceProxyFacts(t *testing.T) {
	t.Parallel() // a control plane of its own (startCluster)
	te, _ := startCluster(t)
	c := te.Client
	ctx := t.Context()
	const ns = "probe"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen http.Header
	)
	// firstReceived is closed when the client has read the first event of
	// /stream; the backend holds the second back until then.
	firstReceived := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Header.Clone()
		mu.Unlock()
		switch r.URL.Path {
		case "/busy":
			w.Header().Set("Retry-After", "7")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"HarnessAtCapacity"}`))
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			f := w.(http.Flusher)
			for i := 1; i <= 2; i++ {
				if i == 2 {
					select {
					case <-firstReceived:
					case <-r.Context().Done(): // the client gave up: the proxy held the first event back
						return
					}
				}
				_, _ = fmt.Fprintf(w, "id: %d\nevent: partial\ndata: {\"n\":%d}\n\n", i, i)
				f.Flush()
			}
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	exposeThroughServiceProxy(t, c, ns, "echo", nil, srv.URL)

	// A ServiceAccount token caller, allowed to proxy to the Service.
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prober"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "proxy"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services/proxy"}, Verbs: []string{"get"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "proxy"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "proxy"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prober"}}}); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(te.Config)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "prober", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(&rest.Config{Host: te.Config.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: te.Config.CAData}})
	if err != nil {
		t.Fatal(err)
	}
	base := proxyBase(t, te.Config, ns, "echo")
	get := func(path string, hdr map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	resp := get("/hello", map[string]string{wire.ProxyAuthorizationHeader: "Bearer forwarded", "Last-Event-ID": "41"})
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	mu.Lock()
	got := seen
	mu.Unlock()
	if resp.StatusCode != http.StatusNoContent || got == nil {
		t.Fatalf("the proxy did not reach the backend: %s %s", resp.Status, b)
	}
	if a := got.Get("Authorization"); a != "" {
		t.Fatalf("the API server forwarded Authorization %q; the design assumes it deletes it", a)
	}
	if got.Get(wire.ProxyAuthorizationHeader) != "Bearer forwarded" || got.Get("Last-Event-ID") != "41" {
		t.Fatalf("headers not forwarded: %v", got)
	}

	resp = get("/busy", nil)
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "7" || string(body) != `{"code":"HarnessAtCapacity"}` {
		t.Fatalf("503 through the proxy: %s, Retry-After %q, body %q, %v", resp.Status, resp.Header.Get("Retry-After"), body, err)
	}

	// SSE: the backend writes the second event only once the client has
	// read the first, so both arrive only if the proxy passes each event on
	// while the response is open. A proxy that held events back until the
	// end would leave the client without the first until the deadline.
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(sctx, http.MethodGet, base+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatalf("GET /stream: %v; the first event (with the headers) never arrived while the backend held the second back", err)
	}
	var ids []string
	err = sse.Read(bufio.NewReader(resp.Body), func(ev sse.Event) bool {
		ids = append(ids, ev.ID)
		if len(ids) == 1 {
			close(firstReceived)
		}
		return true
	})
	_ = resp.Body.Close()
	if err != nil || !slices.Equal(ids, []string{"1", "2"}) {
		t.Fatalf("events %v, %v; want 1 then 2, the first delivered while the backend held the second back", ids, err)
	}
}
