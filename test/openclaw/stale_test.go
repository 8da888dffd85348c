//go:build e2e

package openclaw

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/internal/testutil"
)

// staleModel is pinned to the plugin's harness like model; only the stale
// registry's spec names it, so the policy it adds governs no other spec.
const staleModel = "openai/gpt-5.4-mini"

// A long-lived gateway's registry lags the cluster by up to
// kubernetes.refreshSeconds. The spec makes that lag deterministic: the
// gateway's API server is a proxy that answers the registry's three reads
// from a snapshot taken before a policy change and passes everything else
// (the AgentSession) through. The registry then predicts the cluster's
// Codex for staleModel while the dispatcher, which reads the cluster,
// decides codex-defaults, whose support facts refuse OpenClaw's route.
var _ = Describe("A stale cluster registry", func() {
	It("lets the dispatcher's refusal reach OpenClaw as an AgentHarnessPreflightError without scope, and OpenClaw does not fall back", func(ctx context.Context) {
		frozen := startFrozenRegistry(gateway.identity)
		createModelPolicy(ctx, "stale-registry", staleModel, defaultsHarness)
		s := newModelSession(ctx, staleModel)
		// The dispatcher reads policies from its informer: the turn is sent
		// once its decision for the session names the new policy's harness.
		Eventually(func(g Gomega) {
			g.Expect(cluster.decide(ctx, gateway.identity, s, staleModel).HarnessID).To(Equal(defaultsHarness))
		}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
		stale := gateway.withKubernetes(frozen.url, frozen.caFile)
		logged := gateway.logSize()
		before := len(stub.Requests())

		run := stale.turn(ctx, s.id, s.key, "Say hello marker-"+randomHex(), "--model", staleModel)

		Expect(frozen.served()).To(BeNumerically(">", 0), "the plugin's registry read the snapshot")
		Expect(gateway.supportVerdicts(logged, staleModel)).To(ContainElement(ContainSubstring(`on agent harness "codex"`)),
			"supports() predicted the cluster's Codex from the stale snapshot")
		Expect(run.exit).To(Equal(1), "%s", run)
		Expect(run.stdout+run.stderr).To(ContainSubstring("harness-operator dispatcher refused the turn: HarnessUnsupported"), "the dispatcher's refusal, not the plugin's prediction:\n%s", run)
		Expect(run.stderr).To(ContainSubstring("not falling back to embedded OpenClaw backend"), "no scope: OpenClaw's fallback chain ends\n%s", run)
		Expect(stub.Requests()).To(HaveLen(before), "no model request, from Codex or from OpenClaw's embedded runtime:\n%s", run)
		Expect(cluster.receivedRouteFacts(agentsNS+"/"+s.name)).To(HaveLen(1), "the dispatcher decided the turn")
		Expect(s.get(ctx).Status.NativeBinding).To(BeNil(), "no native thread was started")
	})
})

// frozenRegistry is an API server proxy for the gateway that answers the
// cluster registry's reads from a snapshot taken when it started.
type frozenRegistry struct {
	url, caFile string
	hits        chan struct{}
}

// The three reads of clients/openclaw/src/cluster-registry.ts refresh().
var registryPaths = []string{
	"/apis/harness.openclaw.dev/v1alpha1/agentharnesses",
	"/apis/harness.openclaw.dev/v1alpha1/runtimepolicies",
	"/api/v1/namespaces/" + agentsNS,
}

func startFrozenRegistry(id gatewayIdentity) *frozenRegistry {
	GinkgoHelper()
	target, err := url.Parse(id.apiServer)
	Expect(err).NotTo(HaveOccurred())
	upstream := trusting(id.apiCA)
	DeferCleanup(upstream.CloseIdleConnections)
	token, err := os.ReadFile(id.apiToken)
	Expect(err).NotTo(HaveOccurred())

	snapshot := map[string][]byte{}
	for _, p := range registryPaths {
		req, err := http.NewRequest(http.MethodGet, id.apiServer+p, nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		resp, err := upstream.RoundTrip(req)
		Expect(err).NotTo(HaveOccurred())
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.StatusCode).To(Equal(http.StatusOK), "GET %s as the gateway: %s", p, body)
		snapshot[p] = body
	}

	f := &frozenRegistry{hits: make(chan struct{}, 1024)}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = upstream
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body, ok := snapshot[r.URL.Path]; ok && r.Method == http.MethodGet {
			select {
			case f.hits <- struct{}{}:
			default:
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	srv.StartTLS()
	DeferCleanup(srv.Close)
	f.url = srv.URL
	f.caFile = filepath.Join(GinkgoT().TempDir(), "frozen-ca.pem")
	Expect(os.WriteFile(f.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)).To(Succeed())
	return f
}

// served is how many registry reads the snapshot answered so far.
func (f *frozenRegistry) served() int { return len(f.hits) }

// decide asks the dispatcher, as the gateway, how it would decide the
// session's next turn on m (POST …/decide, without route facts).
func (c *devCluster) decide(ctx context.Context, id gatewayIdentity, s session, m string) harnessDecision {
	GinkgoHelper()
	token, err := os.ReadFile(id.dispatcherToken)
	Expect(err).NotTo(HaveOccurred())
	hc := &http.Client{Transport: trusting(c.caFile)}
	defer hc.CloseIdleConnections()
	body, err := json.Marshal(map[string]any{"runId": "decide-" + randomHex(), "sessionId": s.id, "sessionKey": s.key,
		"provider": "openai", "modelId": strings.TrimPrefix(m, "openai/"), "prompt": "decide"})
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("%s/v1/namespaces/%s/agentsessions/%s/decide", c.dispatcher, agentsNS, s.name), bytes.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), "decide: %s", out)
	var d harnessDecision
	Expect(json.Unmarshal(out, &d)).To(Succeed(), "decide: %s", out)
	return d
}

// trusting is an HTTPS transport that trusts only the CA in caFile.
func trusting(caFile string) *http.Transport {
	GinkgoHelper()
	tr, err := testutil.TrustingTransport(caFile)
	Expect(err).NotTo(HaveOccurred())
	return tr
}

type harnessDecision struct {
	HarnessID string `json:"harnessId"`
}
