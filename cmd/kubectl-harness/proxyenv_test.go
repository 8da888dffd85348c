package main

import (
	"crypto/tls"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openclaw/harness-operator/internal/testutil/proxytest"
)

// TestInClusterRequestsNeverGoThroughTheEnvironmentsProxy: in a process
// whose environment names a proxy from its start, as a shell that exports
// HTTPS_PROXY starts the CLI, the CLI's Kubernetes client and dispatcher
// client send the requests for the in-cluster API server, a dispatcher
// Service and a pod directly. Control: the same clients send a public API
// server's and a public dispatcher URL's requests through the proxy, as
// kubectl does.
func TestInClusterRequestsNeverGoThroughTheEnvironmentsProxy(t *testing.T) {
	if proxytest.InChild() {
		dir := t.TempDir()
		for i, server := range []string{"https://10.96.0.1:443", "https://kubernetes.default.svc", "https://api.example.test:6443"} {
			path := filepath.Join(dir, "kubeconfig-"+strconv.Itoa(i))
			cfg := clientcmdapi.Config{
				Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: server, InsecureSkipTLSVerify: true}},
				AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: "kubeconfig-credential"}},
				Contexts:       map[string]*clientcmdapi.Context{"c": {Cluster: "c", AuthInfo: "u"}},
				CurrentContext: "c",
			}
			if err := clientcmd.WriteToFile(cfg, path); err != nil {
				t.Fatal(err)
			}
			kc, err := (&kubeFlags{kubeconfig: path}).client()
			if err != nil {
				t.Fatal(err)
			}
			hc, err := rest.HTTPClientFor(kc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Log(proxytest.Get(hc, server+"/version"))
		}
		dc := &http.Client{Transport: dispatcherTransport(&tls.Config{MinVersion: tls.VersionTLS12})}
		t.Log(proxytest.Get(dc, "https://harness-dispatcher.harness-system.svc:8443/", "https://10.244.1.7:8443/", "https://dispatcher.example.test/"))
		return
	}
	proxy := proxytest.Start(t)
	proxytest.RunChild(t, append(proxy.Env(), "KUBERNETES_SERVICE_HOST=10.96.0.1")...)
	if got, want := proxy.Seen(), []string{"CONNECT api.example.test:6443", "CONNECT dispatcher.example.test:443"}; !slices.Equal(got, want) {
		t.Fatalf("the proxy was asked to forward %q, want only the public hosts' %q", got, want)
	}
}
