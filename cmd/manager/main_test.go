package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openclaw/harness-operator/internal/testutil"
)

// TestManagerServesProbesAndSecureMetrics starts the manager against a real
// kube-apiserver and checks what a cluster operator relies on: the probes
// answer, metrics refuse anonymous scrapers but serve an authorized one, and
// the three controllers run with the configured concurrency.
func TestManagerServesProbesAndSecureMetrics(t *testing.T) {
	env, err := testutil.StartEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cfg := env.Config

	probeAddr, metricsAddr := freeAddr(t), freeAddr(t)
	done := startManager(t, cfg, options{
		metricsAddr: metricsAddr, secureMetrics: true, probeAddr: probeAddr,
		harnessConcurrency: 3, policyConcurrency: 1, sessionConcurrency: 5,
		gracefulShutdownSecs: 5, operatorNamespace: "harness-operator-system", webhook: webhookOptions{mode: "disabled"}, skipNameValidation: true,
	})

	plain := &http.Client{Timeout: 2 * time.Second}
	waitForRun(t, done, "healthz", func() (bool, string) { return get(plain, "http://"+probeAddr+"/healthz", "") })
	waitForRun(t, done, "readyz", func() (bool, string) { return get(plain, "http://"+probeAddr+"/readyz", "") })

	insecureTLS := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving cert of the test manager
	}}
	metricsURL := "https://" + metricsAddr + "/metrics"
	var anonymous int
	waitForRun(t, done, "metrics listener", func() (bool, string) {
		resp, err := insecureTLS.Get(metricsURL)
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		anonymous = resp.StatusCode
		return true, ""
	})
	if anonymous != http.StatusUnauthorized && anonymous != http.StatusForbidden {
		t.Fatalf("anonymous metrics scrape answered %d; want 401/403", anonymous)
	}

	// The controllers publish their worker counts when they start, which may
	// be after the metrics server answers: poll until all three are there.
	token := scraperToken(t, kubernetes.NewForConfigOrDie(cfg))
	wants := []string{
		`controller_runtime_max_concurrent_reconciles{controller="agentharness"} 3`,
		`controller_runtime_max_concurrent_reconciles{controller="runtimepolicy"} 1`,
		`controller_runtime_max_concurrent_reconciles{controller="agentsession"} 5`,
	}
	waitForRun(t, done, "authorized metrics scrape with the controllers' concurrency", func() (bool, string) {
		ok, body := get(insecureTLS, metricsURL, token)
		if !ok {
			return false, body
		}
		for _, want := range wants {
			if !strings.Contains(body, want) {
				return false, "metrics lack " + want
			}
		}
		return true, ""
	})
}

func TestRunRefusesZeroConcurrency(t *testing.T) {
	err := run(context.Background(), nil, options{harnessConcurrency: 0, policyConcurrency: 1, sessionConcurrency: 1})
	if err == nil || !strings.Contains(err.Error(), "--agentharness-concurrency must be at least 1") {
		t.Fatalf("err = %v, want a message naming --agentharness-concurrency", err)
	}
}

// scraperToken returns a bearer token of a ServiceAccount allowed to GET /metrics.
func scraperToken(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "scraper", Namespace: "default"}}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("request token: %v", err)
	}
	return tr.Status.Token
}

func get(c *http.Client, url, token string) (bool, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK, fmt.Sprintf("%d %s", resp.StatusCode, body)
}

// waitFor polls check until it reports OK; the deadline ends the poll with
// the last detail.
func waitFor(t *testing.T, what string, check func() (bool, string)) {
	t.Helper()
	waitForRun(t, nil, what, check)
}

// waitForRun is waitFor that also ends when the manager returns (done).
// startManager runs the manager with cfg and opts until the test ends (its
// context is cancelled then, and an error on shutdown fails the test); run's
// result arrives on the returned channel (waitForRun).
func startManager(t *testing.T, cfg *rest.Config, opts options) chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager returned an error on shutdown: %v", err)
		}
	})
	return done
}

func waitForRun(t *testing.T, done chan error, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		ok, last := check()
		if ok {
			return
		}
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("%s: the manager returned (%v); last: %.300s", what, err, last)
		case <-deadline.C:
			t.Fatalf("%s: not OK within 30s; last: %.300s", what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := testutil.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
