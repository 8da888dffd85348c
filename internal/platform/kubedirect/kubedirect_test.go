package kubedirect

import (
	"net/http"
	"slices"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/openclaw/harness-operator/internal/testutil/proxytest"
)

// TestKubernetesClientsNeverUseTheEnvironmentsProxy: in a process whose
// environment names a proxy from its start, a client of Config sends nothing
// to it — not the in-cluster API server's requests, nor any other host's.
// Control: Go's default client in the same process does reach the proxy, so
// the environment was in force.
func TestKubernetesClientsNeverUseTheEnvironmentsProxy(t *testing.T) {
	if proxytest.InChild() {
		for _, host := range []string{"https://10.96.0.1:443", "https://kubernetes.default.svc", "https://api.example.test:6443"} {
			hc, err := rest.HTTPClientFor(Config(&rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}))
			if err != nil {
				t.Fatal(err)
			}
			t.Log(proxytest.Get(hc, host+"/version"))
		}
		t.Log(proxytest.Get(&http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}, "https://control.example.test/"))
		return
	}
	proxy := proxytest.Start(t)
	proxytest.RunChild(t, append(proxy.Env(), "KUBERNETES_SERVICE_HOST=10.96.0.1")...)
	if got, want := proxy.Seen(), []string{"CONNECT control.example.test:443"}; !slices.Equal(got, want) {
		t.Fatalf("the proxy was asked to forward %q, want only the control's %q: the Kubernetes clients must not use a proxy", got, want)
	}
}

func TestConfigKeepsNil(t *testing.T) {
	if Config(nil) != nil {
		t.Fatal("Config(nil) is not nil")
	}
}
