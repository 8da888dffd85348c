package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/internal/testutil"
)

// defaultTLSSecret is the Secret name config/rbac/dispatcher_tls_role.yaml
// grants (the chart's <fullname>-dispatcher-tls).
const defaultTLSSecret = "harness-operator-dispatcher-tls"

// TestTLSCertificates runs run() against envtest's kube-apiserver with each
// certificate source a cluster uses:
//   - --tls-secret-name, as the dispatcher's ServiceAccount with exactly the
//     RBAC of config/rbac (dispatcher/role.yaml, dispatcher_tls_role.yaml,
//     dispatcher_turn_token_role.yaml, and the chart's leader-election Role):
//     the first start creates the Secret (and the turn-token Secret) and
//     serves a certificate signed by its CA; a restart serves with the same CA,
//     also when a DNS name is added; a Secret the Role does not name is never
//     served (fail closed);
//   - --tls-cert-file/--tls-key-file, as a ServiceAccount without the TLS Role
//     (as the chart binds it with dispatcher.tls.secretName): the turn-token
//     Role alone lets it create its turn-token Secret; replacing the files
//     changes the served certificate without a restart.
func TestTLSCertificates(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS must be set: KUBEBUILDER_ASSETS=... go test ./cmd/dispatcher/")
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr)))
	t.Setenv("POD_NAMESPACE", "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := testutil.StartEnv()
	must(t, err)
	defer func() { _ = env.Stop() }()
	k8s := env.Client

	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dispatcher-tls-"}}
	must(t, k8s.Create(ctx, nsObj))
	ns := nsObj.Name
	sa := dispatcherServiceAccount(ctx, t, k8s, ns, true)
	asDispatcher := rest.CopyConfig(env.Config)
	asDispatcher.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}

	secretOpts := func(t *testing.T, journalDir, secretName string) options {
		o := testOptions(t, journalDir, filepath.Join(t.TempDir(), "ca.pem"))
		o.leaderElectionNS = ns
		o.tls = tlsOptions{
			secretName: secretName, secretNS: ns, dnsNames: "localhost,dispatcher.example", caOut: o.tls.caOut,
			certValidity: 365 * 24 * time.Hour, certLookahead: 90 * 24 * time.Hour, certCheckInterval: time.Hour,
		}
		return o
	}
	journalDir := filepath.Join(t.TempDir(), "journal")
	var firstCA []byte

	t.Run("--tls-secret-name: the first start creates the Secret and serves a certificate signed by its CA", func(t *testing.T) {
		o := secretOpts(t, journalDir, defaultTLSSecret)
		r := start(ctx, asDispatcher, o)
		defer r.stop(t)
		waitStatus(t, r, "http://"+o.probeAddr+"/readyz", http.DefaultClient, http.StatusOK, 60*time.Second)

		var secret corev1.Secret
		must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: defaultTLSSecret}, &secret))
		for _, k := range []string{"tls.crt", "tls.key", "ca.crt", "ca.key"} {
			if len(secret.Data[k]) == 0 {
				t.Fatalf("Secret %s lacks %s (has %d keys)", defaultTLSSecret, k, len(secret.Data))
			}
		}
		firstCA = secret.Data["ca.crt"]
		caOut, err := os.ReadFile(o.tls.caOut)
		must(t, err)
		if !bytes.Equal(caOut, firstCA) {
			t.Fatal("--tls-ca-out differs from the Secret's ca.crt")
		}
		for _, name := range []string{"localhost", "dispatcher.example"} {
			if err := dialVerified(o.bindAddr, name, firstCA); err != nil {
				t.Fatalf("ServerName %s: %v", name, err)
			}
		}
	})

	t.Run("--tls-secret-name: a restart serves with the same CA", func(t *testing.T) {
		if firstCA == nil {
			t.Skip("the first start failed")
		}
		o := secretOpts(t, journalDir, defaultTLSSecret)
		r := start(ctx, asDispatcher, o)
		defer r.stop(t)
		waitStatus(t, r, "http://"+o.probeAddr+"/readyz", http.DefaultClient, http.StatusOK, 60*time.Second)
		if err := dialVerified(o.bindAddr, "localhost", firstCA); err != nil {
			t.Fatalf("a client trusting the first start's CA: %v", err)
		}
		caOut, err := os.ReadFile(o.tls.caOut)
		must(t, err)
		if !bytes.Equal(caOut, firstCA) {
			t.Fatal("the restart wrote a different CA to --tls-ca-out")
		}
	})

	t.Run("--tls-secret-name: a new DNS name gets a new certificate from the same CA", func(t *testing.T) {
		if firstCA == nil {
			t.Skip("the first start failed")
		}
		o := secretOpts(t, journalDir, defaultTLSSecret)
		o.tls.dnsNames += ",added.example"
		r := start(ctx, asDispatcher, o)
		defer r.stop(t)
		waitStatus(t, r, "http://"+o.probeAddr+"/readyz", http.DefaultClient, http.StatusOK, 60*time.Second)
		for _, name := range []string{"localhost", "added.example"} {
			if err := dialVerified(o.bindAddr, name, firstCA); err != nil {
				t.Fatalf("ServerName %s, trusting the first CA: %v", name, err)
			}
		}
	})

	t.Run("--tls-secret-name: a Secret the Role does not name is never served", func(t *testing.T) {
		// create and list/watch are not limited by name, update is: the
		// rotator cannot write the certificate, so the API never listens, is
		// never ready, and the dispatcher gives up.
		o := secretOpts(t, filepath.Join(t.TempDir(), "journal"), "not-granted-tls")
		cfg := rest.CopyConfig(asDispatcher)
		denied := &forbiddenAnswers{}
		cfg.Wrap(denied.wrap)
		r := start(ctx, cfg, o)
		defer r.cancel()
		deadline := time.After(90 * time.Second)
		for {
			select {
			case err := <-r.done:
				if err == nil {
					t.Fatal("run returned without error")
				}
				// It gave up because the API server refused it the
				// certificate's write to exactly that Secret.
				refusal := denied.find(http.MethodPut, "secrets", "not-granted-tls")
				if refusal == nil {
					t.Fatalf("run failed (%v), but the API server refused no update of Secret not-granted-tls; refusals: %v", err, denied.all())
				}
				t.Logf("run failed as expected: %v; the API server answered: %v", err, refusal)
				return
			case <-deadline:
				t.Fatal("run did not give up within 90s")
			case <-time.After(200 * time.Millisecond):
			}
			if conn, err := net.DialTimeout("tcp", o.bindAddr, time.Second); err == nil {
				_ = conn.Close()
				t.Fatalf("the API listens on %s without a certificate", o.bindAddr)
			}
			if resp, err := http.Get("http://" + o.probeAddr + "/readyz?verbose"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK || !strings.Contains(string(b), "[-]api failed") {
					t.Fatalf("readyz without a certificate: %d %s", resp.StatusCode, b)
				}
			}
		}
	})

	t.Run("--tls-cert-file: replaced files are served without a restart", func(t *testing.T) {
		dir := t.TempDir()
		certA, caA, err := selfManagedCert([]string{"localhost"}, nil, time.Now())
		must(t, err)
		certFile, keyFile := writePair(t, dir, certA)
		filesNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dispatcher-files-"}}
		must(t, k8s.Create(ctx, filesNS))
		asFilesDispatcher := rest.CopyConfig(env.Config)
		asFilesDispatcher.Impersonate = rest.ImpersonationConfig{
			UserName: "system:serviceaccount:" + filesNS.Name + ":" + dispatcherServiceAccount(ctx, t, k8s, filesNS.Name, false),
		}
		o := testOptions(t, filepath.Join(t.TempDir(), "journal"), "")
		o.leaderElect, o.leaderElectionNS = false, filesNS.Name
		o.tls = tlsOptions{certFile: certFile, keyFile: keyFile}
		r := start(ctx, asFilesDispatcher, o)
		defer r.stop(t)
		waitStatus(t, r, "http://"+o.probeAddr+"/readyz", http.DefaultClient, http.StatusOK, 60*time.Second)
		if err := dialVerified(o.bindAddr, "localhost", caA); err != nil {
			t.Fatalf("the first pair: %v", err)
		}

		certB, caB, err := selfManagedCert([]string{"localhost"}, nil, time.Now())
		must(t, err)
		writePair(t, dir, certB)
		// Poll until a client trusting only the new CA is served.
		deadline := time.NewTimer(30 * time.Second)
		defer deadline.Stop()
		for dialVerified(o.bindAddr, "localhost", caB) != nil {
			select {
			case err := <-r.done:
				r.done <- err
				t.Fatalf("run returned: %v", err)
			case <-deadline.C:
				t.Fatal("the replaced certificate is not served within 30s")
			case <-time.After(100 * time.Millisecond):
			}
		}
		if err := dialVerified(o.bindAddr, "localhost", caA); err == nil {
			t.Fatal("the old certificate is still served")
		}
	})
}

// dialVerified opens a TLS connection to addr that verifies the server for
// serverName against the CA PEM only.
func dialVerified(addr, serverName string, caPEM []byte) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return os.ErrInvalid
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	return conn.Close()
}

// dispatcherServiceAccount creates the dispatcher's ServiceAccount in ns with
// the RBAC a cluster gives it: config/rbac/dispatcher/role.yaml (cluster-wide),
// config/rbac/dispatcher_turn_token_role.yaml, the leader-election Role of the
// chart and, with selfManagedTLS, config/rbac/dispatcher_tls_role.yaml in ns.
func dispatcherServiceAccount(ctx context.Context, t *testing.T, k8s client.Client, ns string, selfManagedTLS bool) string {
	t.Helper()
	const sa = "dispatcher"
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}
	must(t, k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}}))

	var cr rbacv1.ClusterRole
	readYAML(t, "../../config/rbac/dispatcher/role.yaml", &cr)
	cr.Name = ns + "-dispatcher"
	must(t, k8s.Create(ctx, &cr))
	must(t, k8s.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: cr.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects:   subjects,
	}))

	var tlsRole, turnTokenRole rbacv1.Role
	readYAML(t, "../../config/rbac/dispatcher_tls_role.yaml", &tlsRole)
	readYAML(t, "../../config/rbac/dispatcher_turn_token_role.yaml", &turnTokenRole)
	leader := rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "dispatcher-leader-election"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
			{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		},
	}
	roles := []*rbacv1.Role{&turnTokenRole, &leader}
	if selfManagedTLS {
		roles = append(roles, &tlsRole)
	}
	for _, role := range roles {
		role.Namespace = ns
		must(t, k8s.Create(ctx, role))
		must(t, k8s.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   subjects,
		}))
	}
	return sa
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(path)
	must(t, err)
	must(t, yaml.UnmarshalStrict(data, into))
}

// forbiddenAnswers records the API server's Forbidden answers to the
// requests of a rest.Config (rest.Config.Wrap(f.wrap)).
type forbiddenAnswers struct {
	mu      sync.Mutex
	answers []forbiddenAnswer
}

type forbiddenAnswer struct {
	method string
	err    error // the answer's Status as an API error
}

func (f *forbiddenAnswers) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusForbidden {
			return resp, err
		}
		body, readErr := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		answer := forbiddenAnswer{method: req.Method, err: errors.Join(fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, body), readErr)}
		if obj, decodeErr := runtime.Decode(clientgoscheme.Codecs.UniversalDeserializer(), body); decodeErr == nil {
			if st, ok := obj.(*metav1.Status); ok {
				answer.err = apierrors.FromObject(st)
			}
		}
		f.mu.Lock()
		f.answers = append(f.answers, answer)
		f.mu.Unlock()
		return resp, nil
	})
}

// find returns the Forbidden answer to a request with method for the named
// object of resource, or nil.
func (f *forbiddenAnswers) find(method, resource, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.answers {
		var se *apierrors.StatusError
		if a.method == method && apierrors.IsForbidden(a.err) && errors.As(a.err, &se) &&
			se.ErrStatus.Details != nil && se.ErrStatus.Details.Kind == resource && se.ErrStatus.Details.Name == name {
			return a.err
		}
	}
	return nil
}

func (f *forbiddenAnswers) all() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.answers))
	for _, a := range f.answers {
		out = append(out, a.method+" "+a.err.Error())
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
