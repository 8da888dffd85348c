//go:build e2e

package openclaw

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

const (
	// lateModel is pinned to the plugin's harness on the second gateway;
	// the harness a RuntimePolicy sends it to is created while that
	// gateway runs.
	lateModel   = "openai/gpt-5.4-nano"
	lateHarness = "codex-late"
	// operatorNS holds the turn-token key every dispatcher of the cluster
	// shares (devcluster's operator namespace).
	operatorNS = "harness-operator-system"
)

var _ = Describe("A long-lived gateway", func() {
	// Each model request is held until all three arrived: the gateway runs
	// the three clients' turns at once, not one after the other.
	It("runs several clients' sessions at once, each getting only its own reply", func(ctx context.Context) {
		const n = 3
		gate := stubmodel.NewGate()
		DeferCleanup(gate.Release)
		markers, replies, sessions := make([]string, n), make([]string, n), make([]session, n)
		for i := range n {
			markers[i] = "marker-" + randomHex()
			replies[i] = "Concurrent reply " + strconv.Itoa(i) + " " + markers[i]
			stub.When(markers[i], stubmodel.Stall(gate, stubmodel.Text(replies[i])))
			sessions[i] = newSession(ctx, "")
		}
		runs := make([]chan agentRun, n)
		for i := range n {
			runs[i] = make(chan agentRun, 1)
			go func() {
				defer GinkgoRecover()
				runs[i] <- gateway.turn(ctx, sessions[i].id, sessions[i].key, "Say hello "+markers[i])
			}()
		}
		held, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		for i := range n {
			_, err := stub.WaitMarker(held, markers[i])
			Expect(err).NotTo(HaveOccurred(), "turn %d reached the model while the others were held there", i)
		}
		gate.Release()

		got := make([]agentRun, n)
		for i := range n {
			// turn ends each run within turnTimeout.
			Eventually(ctx, runs[i]).WithTimeout(turnTimeout + time.Minute).Should(Receive(&got[i]))
		}
		for i, run := range got {
			Expect(run.exit).To(Equal(0), "%s", run)
			texts := run.result().texts()
			Expect(texts).To(ContainElement(ContainSubstring(replies[i])), "%s", run)
			for j := range n {
				if j != i {
					Expect(texts).NotTo(ContainElement(ContainSubstring(markers[j])), "turn %d got turn %d's reply:\n%s", i, j, run)
				}
			}
			Expect(stub.RequestsContaining(markers[i])).To(HaveLen(1), "turn %d ran once", i)
			Expect(sessions[i].lastTurn(ctx).Outcome).To(Equal(v1alpha1.TurnSucceeded))
		}
		// OpenClaw's transcript holds an `openclaw agent` turn's reply once:
		// the plugin mirrored it, and OpenClaw's own delivery mirror did not
		// write it again (one session's, read once: each read is a CLI).
		h := gateway.served.call(ctx, "chat.history", map[string]any{"sessionKey": sessions[0].key})
		Expect(historyTexts(h, "assistant")).To(ConsistOf(replies[0]), "chat.history:\n%s", h)
	})

	// A gateway of its own: its dispatcher is one this spec restarts, and
	// its plugin reads the API server through a proxy that counts the
	// registry's reads, so the spec knows when a refresh saw a change.
	Describe("with a dispatcher of its own", Ordered, func() {
		var (
			disp  *ownDispatcher
			api   *countingProxy
			owner *openClaw // its config and log
		)
		BeforeAll(func(ctx context.Context) {
			disp = startOwnDispatcher(ctx)
			api = startCountingProxy(gateway.identity)
			id := gateway.identity
			id.apiServer, id.apiCA = api.url, api.caFile
			owner = newOpenClaw(gateway.tools, gateway.tarball, stub.BaseURL(), &devCluster{dispatcher: disp.url, caFile: disp.caFile}, id)
			owner.serve(ctx, func(cfg map[string]any) {
				entry := cfg["plugins"].(map[string]any)["entries"].(map[string]any)[pluginID].(map[string]any)
				entry["config"].(map[string]any)["kubernetes"].(map[string]any)["refreshSeconds"] = 1
				defaults := cfg["agents"].(map[string]any)["defaults"].(map[string]any)
				defaults["models"].(map[string]any)[lateModel] = map[string]any{"agentRuntime": map[string]any{"id": pluginID}}
				// OpenClaw's own rewrite of the config keeps the models
				// `--model` may name in a list of their own.
				if policy, ok := defaults["modelPolicy"].(map[string]any); ok {
					if allow, ok := policy["allow"].([]any); ok {
						policy["allow"] = append(allow, lateModel)
					}
				}
			})
		})

		It("selects a harness added to the cluster while it runs, without a restart", func(ctx context.Context) {
			s := newModelSession(ctx, lateModel)
			before := "marker-" + randomHex()
			stub.When(before, stubmodel.Text("Before "+before))
			logged := owner.logSize()
			run := owner.turn(ctx, s.id, s.key, "Say hello "+before, "--model", lateModel)
			Expect(run.exit).To(Equal(0), "%s", run)
			Expect(owner.supportVerdicts(logged, lateModel)).To(ContainElement(ContainSubstring(`on agent harness "codex"`)), "%s", run)

			createLateHarness(ctx)
			// The dispatcher decides from its informers; the gateway's
			// registry from its next refresh.
			own := &devCluster{dispatcher: disp.url, caFile: disp.caFile}
			Eventually(func(g Gomega) {
				g.Expect(own.decide(ctx, gateway.identity, s, lateModel).HarnessID).To(Equal(lateHarness))
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
			// Two completed reads of each list after this point: the second
			// one started after the change was visible.
			h, p := api.reads(registryPaths[0]), api.reads(registryPaths[1])
			Eventually(func(g Gomega) {
				g.Expect(api.reads(registryPaths[0])).To(BeNumerically(">=", h+2))
				g.Expect(api.reads(registryPaths[1])).To(BeNumerically(">=", p+2))
			}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed(), "the registry polls every kubernetes.refreshSeconds")

			after := "marker-" + randomHex()
			stub.When(after, stubmodel.Text("After "+after))
			logged = owner.logSize()
			run = owner.turn(ctx, s.id, s.key, "Say hello "+after, "--model", lateModel)

			Expect(run.exit).To(Equal(0), "%s", run)
			Expect(run.result().texts()).To(ContainElement(ContainSubstring("After "+after)), "%s", run)
			Expect(owner.supportVerdicts(logged, lateModel)).To(ContainElement(ContainSubstring(`on agent harness "`+lateHarness+`"`)),
				"supports() predicts the new harness from the registry's refresh:\n%s", run)
			Expect(s.get(ctx).Status.AgentHarnessID).To(Equal(lateHarness), "the turn ran on the new harness")
		})

		It("keeps serving across a dispatcher restart under a running turn, which fails visibly and runs once", func(ctx context.Context) {
			marker := "marker-" + randomHex()
			gate := stubmodel.NewGate()
			DeferCleanup(gate.Release)
			stub.When(marker, stubmodel.Stall(gate, stubmodel.Text("Held reply "+marker)))
			s := newSession(ctx, "")
			done := make(chan agentRun, 1)
			go func() {
				defer GinkgoRecover()
				done <- owner.turn(ctx, s.id, s.key, "Say hello "+marker)
			}()
			_, err := stub.WaitMarker(ctx, marker)
			Expect(err).NotTo(HaveOccurred(), "the turn reached the model")

			disp.crash()
			disp.start(ctx)
			gate.Release()

			var run agentRun
			Eventually(ctx, done).WithTimeout(turnTimeout + time.Minute).Should(Receive(&run))
			Expect(run.exit).To(Equal(1), "the turn fails visibly:\n%s", run)
			Expect(run.output()).To(ContainSubstring("HarnessUnavailable"), "the dispatcher's word on a turn it lost in a restart:\n%s", run)
			Expect(stub.RequestsContaining(marker)).To(HaveLen(1), "the turn ran once: neither the dispatcher nor OpenClaw ran it again")
			Expect(requestsNaming(marker)).To(Equal(1), "nor OpenClaw's embedded runtime")
			Expect(s.lastTurn(ctx).Outcome).NotTo(Equal(v1alpha1.TurnSucceeded))

			// The gateway and its plugin go on with the restarted dispatcher.
			next := "marker-" + randomHex()
			stub.When(next, stubmodel.Text("Next reply "+next))
			run = owner.turn(ctx, s.id, s.key, "Say hello again "+next)
			Expect(run.exit).To(Equal(0), "%s", run)
			Expect(run.result().texts()).To(ContainElement(ContainSubstring("Next reply "+next)), "%s", run)
		})
	})
})

// createLateHarness adds lateHarness (the suite's Codex, any route) and a
// RuntimePolicy sending lateModel to it, and waits until it is Ready.
func createLateHarness(ctx context.Context) {
	GinkgoHelper()
	base := &v1alpha1.AgentHarness{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: agentsNS, Name: codexHarness}, base)).To(Succeed())
	h := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Name: lateHarness, Namespace: agentsNS}, Spec: *base.Spec.DeepCopy()}
	h.Spec.HarnessID = lateHarness
	Expect(k8s.Create(ctx, h)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(k8s.Delete(ctx, h)).To(Succeed()) })
	createModelPolicy(ctx, "late-harness", lateModel, lateHarness)
	waitHarnessReady(ctx, k8s, lateHarness)
}

// ownDispatcher is a second dispatcher of the suite's cluster, as devcluster
// runs its own (devcluster ends when its dispatcher exits, so it cannot
// restart that one), on its own port and journal.
type ownDispatcher struct {
	dir, url, caFile, probe string
	args                    []string
	starts                  int
	proc                    *testutil.Process
}

func startOwnDispatcher(ctx context.Context) *ownDispatcher {
	GinkgoHelper()
	addr := func() string {
		a, err := testutil.FreeAddr()
		Expect(err).NotTo(HaveOccurred())
		return a
	}
	d := &ownDispatcher{dir: GinkgoT().TempDir()}
	bind := addr()
	d.url, d.caFile, d.probe = "https://"+bind, filepath.Join(d.dir, "dispatcher-ca.pem"), addr()
	d.args = []string{
		"--leader-elect=false",
		"--bind-address=" + bind,
		"--probe-bind-address=" + d.probe,
		"--metrics-bind-address=" + addr(),
		"--journal-dir=" + filepath.Join(d.dir, "journal"),
		"--turn-token-secret-namespace=" + operatorNS,
		"--tls-ca-out=" + d.caFile,
		"--token-audience=" + dispatcherAudience,
		"--require-token-audience",
		"--" + netguard.AllowInsecureLoopbackFlag,
	}
	d.start(ctx)
	DeferCleanup(func() { GinkgoWriter.Println(d.proc.Stop(time.Minute)) })
	return d
}

// start runs the dispatcher (again: on the same journal and address) and
// waits for its readiness.
func (d *ownDispatcher) start(ctx context.Context) {
	GinkgoHelper()
	d.starts++
	var err error
	d.proc, err = testutil.StartProcess("dispatcher-"+strconv.Itoa(d.starts), filepath.Join(cluster.bin, "dispatcher"), d.dir,
		[]string{"KUBECONFIG=" + cluster.kubeconfig}, d.args...)
	Expect(err).NotTo(HaveOccurred())
	Expect(d.proc.WaitReady("http://"+d.probe+"/readyz", time.Minute)).To(Succeed(), "%s", d.proc.Tail(8<<10))
}

// crash kills the dispatcher (SIGKILL: no shutdown, its turns left as they
// were) and reaps it.
func (d *ownDispatcher) crash() {
	GinkgoHelper()
	Expect(syscall.Kill(d.proc.Pid(), syscall.SIGKILL)).To(Succeed())
	GinkgoWriter.Println(d.proc.Stop(time.Minute))
}

// countingProxy passes the gateway's API requests through to the API
// server and counts the answered registry reads (registryPaths).
type countingProxy struct {
	url, caFile string
	answered    map[string]*atomic.Int64
}

func startCountingProxy(id gatewayIdentity) *countingProxy {
	GinkgoHelper()
	target, err := url.Parse(id.apiServer)
	Expect(err).NotTo(HaveOccurred())
	upstream := trusting(id.apiCA)
	DeferCleanup(upstream.CloseIdleConnections)
	p := &countingProxy{answered: map[string]*atomic.Int64{}}
	for _, path := range registryPaths {
		p.answered[path] = &atomic.Int64{}
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = upstream
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxy.ServeHTTP(w, r)
		if n, ok := p.answered[r.URL.Path]; ok && r.Method == http.MethodGet {
			n.Add(1)
		}
	}))
	srv.StartTLS()
	DeferCleanup(srv.Close)
	p.url = srv.URL
	p.caFile = filepath.Join(GinkgoT().TempDir(), "proxy-ca.pem")
	Expect(os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)).To(Succeed())
	return p
}

// reads is how many reads of path the proxy answered so far.
func (p *countingProxy) reads(path string) int64 { return p.answered[path].Load() }
