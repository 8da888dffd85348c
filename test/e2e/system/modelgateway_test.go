//go:build e2e

package system

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2" //nolint:revive // Ginkgo's DSL
	. "github.com/onsi/gomega"    //nolint:revive // Gomega's DSL
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/dispatcher/turntoken"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// The harness of the model-gateway specs: created with its own provider
// credential, then moved behind the chart's model gateway.
const (
	gwHarness = "codex-gw"
	gwSession = "gw"
	gwPod     = gwHarness + "-app-server-0"
	// credentialPrefix starts every credential the dispatcher seals for the
	// gateway.
	credentialPrefix = "hmg1."
	// gwStorageClass names the static volume of the harness's native home
	// (no provisioner: no StorageClass object either).
	gwStorageClass = "e2e-static"
)

// modelGatewaySpecs run a managed harness's turns through the chart's model
// gateway (modelGateway.enabled): the provider key only in the gateway, the
// sealed credential never at the upstream, nothing of either in the pod,
// and a session of the harness from before the gateway going on.
//
// The local cluster has no DNS, and two of the release's addresses are
// Service names: the gateway's --dispatcher-url and the manager's
// --model-gateway-url, which Codex dials. The suite maps them to their
// Services' addresses with hostAliases (a patch of the gateway's Deployment
// and of the harness's StatefulSet the manager applies without that field),
// as a cluster DNS would. The stub model speaks plain HTTP on the bridge's
// gateway address; an upstream must be https, so a TLS front with a private
// CA serves it, and the gateway pods trust that CA through SSL_CERT_FILE.
func modelGatewaySpecs() {
	Context("with the model gateway", Ordered, func() {
		var key, canary, earlierMarker, threadBefore string

		BeforeAll(func() {
			front := startTLSFront("http://" + stub.Addr())
			mustKubectl("create", "secret", "generic", "e2e-upstream-ca", "-n", operatorNamespace,
				"--from-literal=ca.crt="+string(front.CABundle))
			gateway := release + "-model-gateway"
			patch, err := json.Marshal([]map[string]any{
				{"op": "add", "path": "/spec/template/spec/hostAliases", "value": []map[string]any{{
					"ip":        serviceIP(release + "-dispatcher"),
					"hostnames": []string{release + "-dispatcher." + operatorNamespace + ".svc"},
				}}},
				{"op": "add", "path": "/spec/template/spec/volumes/-", "value": map[string]any{
					"name": "e2e-upstream-ca", "secret": map[string]any{"secretName": "e2e-upstream-ca"},
				}},
				{"op": "add", "path": "/spec/template/spec/containers/0/volumeMounts/-", "value": map[string]any{
					"name": "e2e-upstream-ca", "mountPath": "/etc/e2e-upstream-ca", "readOnly": true,
				}},
				{"op": "add", "path": "/spec/template/spec/containers/0/env/-", "value": map[string]any{
					"name": "SSL_CERT_FILE", "value": "/etc/e2e-upstream-ca/ca.crt",
				}},
			})
			Expect(err).NotTo(HaveOccurred())
			mustKubectl("patch", "deployment", gateway, "-n", operatorNamespace, "--type=json", "-p", string(patch))
			mustKubectl("rollout", "status", "deployment/"+gateway, "-n", operatorNamespace, "--timeout=3m")

			key = "e2e-gateway-key-" + randomToken()
			canary = "e2e-canary-" + randomToken()
			gatewayCanary = canary
			// From a file: the command line, which the suite prints, never
			// holds the key.
			keyFile := filepath.Join(work, "gateway-key")
			Expect(os.WriteFile(keyFile, []byte(key), 0o600)).To(Succeed())
			mustKubectl("create", "secret", "generic", "gateway-key", "-n", managedNS, "--from-file=key="+keyFile)
			// The native home outlives the pods (the gateway going on rolls
			// them): a static hostPath PersistentVolume on the node, as for
			// the dispatcher's journal.
			home := filepath.Join(env.volumesDir, "gw-home")
			Expect(os.MkdirAll(home, 0o700)).To(Succeed())
			Expect(os.Chown(home, 65532, 65532)).To(Succeed())
			applyManifest("gw-home-pv.yaml", fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: %[1]s}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: e2e-gw-home
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: %[1]s
  claimRef: {namespace: %[2]s, name: codex-home-%[3]s-app-server-0}
  hostPath: {path: %[4]s, type: Directory}
`, gwStorageClass, managedNS, gwHarness, home))
			// Before the gateway: the harness holds its own credential
			// (managed_test.go's model-key and codex-config).
			// With no pod yet (replicas 0), so that the patch below rolls
			// nothing.
			gatewayUpstream = "https://" + strings.TrimPrefix(front.URL, "wss://") + "/v1"
			applyManifest("gw-harness.yaml", gatewayHarness(0, false))
			hostPatch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"hostAliases": []map[string]any{{
					"ip":        serviceIP(gateway),
					"hostnames": []string{gateway + "." + operatorNamespace + ".svc"},
				}},
			}}}})
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() int {
				return kubectl("patch", "statefulset", gwHarness+"-app-server", "-n", managedNS, "--type=merge", "-p", string(hostPatch)).exit
			}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Equal(0), "the harness's StatefulSet exists")
			applyManifest("gw-harness.yaml", gatewayHarness(1, false))
			mustKubectl("wait", "--for=condition=Ready", "--timeout=180s", "agentharness/"+gwHarness, "-n", managedNS)
			applyManifest("gw-session.yaml", fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentSession
metadata: {name: %s, namespace: %s}
spec:
  agentId: main
  sessionKey: agent:main:gw
  sessionId: 3a7c1e9b-5d2f-4b8a-9c6e-1f0d2b3a4c5e
  model: openai/gpt-5.5
  runtimeOverride: %s
`, gwSession, managedNS, gwHarness))
		})

		It("continues a session from before the gateway on a re-seeded thread, with its conversation in the model's next request", func() {
			earlierMarker = "before-the-gateway-" + randomToken()[:12]
			r := harnessCLI("turn", gwSession, "-n", managedNS, "--route-facts", "none", "--prompt", "Remember "+earlierMarker)
			Expect(r.exit).To(Equal(0), "%s", r)
			Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
			session := &v1alpha1.AgentSession{}
			Eventually(func(g Gomega) {
				g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: gwSession}, session)).To(Succeed())
				g.Expect(session.Status.NativeBinding).NotTo(BeNil())
			}).WithTimeout(30 * time.Second).Should(Succeed())
			threadBefore = session.Status.NativeBinding.ThreadID

			// The gateway goes on: the harness's own credential goes, the
			// gateway's upstream and key come in; the pod rolls.
			applyManifest("gw-harness.yaml", gatewayHarness(1, true))
			Eventually(func(g Gomega) {
				var pod corev1.Pod
				g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: gwPod}, &pod)).To(Succeed())
				g.Expect(podEnv(pod)).To(HaveKey("E2E_CANARY"), "the rolled pod")
				g.Expect(pod.Status.ContainerStatuses).NotTo(BeEmpty())
				g.Expect(pod.Status.ContainerStatuses[0].Ready).To(BeTrue())
			}).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			mustKubectl("wait", "--for=condition=Ready", "--timeout=180s", "agentharness/"+gwHarness, "-n", managedNS)

			marker := "after-the-gateway-" + randomToken()[:12]
			r = harnessCLI("turn", gwSession, "-n", managedNS, "--route-facts", "none", "--prompt", "Say hello "+marker)
			Expect(r.exit).To(Equal(0), "never NativeThreadLost: %s", r)
			Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
			reqs := stub.RequestsContaining(marker)
			Expect(reqs).NotTo(BeEmpty())
			Expect(string(reqs[0].Body)).To(ContainSubstring(earlierMarker), "the earlier turn's conversation reached the model")
			Eventually(func(g Gomega) {
				g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: gwSession}, session)).To(Succeed())
				g.Expect(session.Status.NativeBinding).NotTo(BeNil())
				g.Expect(session.Status.NativeBinding.ThreadID).NotTo(Equal(threadBefore), "a re-seeded thread")
			}).WithTimeout(30 * time.Second).Should(Succeed())
		})

		It("runs the turn through the gateway: the upstream sees the harness's key and never the sealed credential", func() {
			marker := "through-the-gateway-" + randomToken()[:12]
			r := harnessCLI("turn", gwSession, "-n", managedNS, "--route-facts", "none", "--prompt", "Say hello "+marker)
			Expect(r.exit).To(Equal(0), "%s", r)
			Expect(r.stdout).To(ContainSubstring(stubmodel.DefaultText))
			reqs := stub.RequestsContaining(marker)
			Expect(reqs).NotTo(BeEmpty())
			for _, req := range reqs {
				Expect(req.Header.Get("Authorization")).To(Equal("Bearer "+key), "the gateway injected the harness's key")
			}
			expectNoCredentialAtStub()
		})

		It("shows a tool in the session no provider key and no credential in the pod's environment, Codex home or mounted files", func() {
			var pod corev1.Pod
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: gwPod}, &pod)).To(Succeed())
			dirs := []string{"\"$CODEX_HOME\"", "/proc/self/environ", "/proc/1/environ"}
			for _, c := range pod.Spec.Containers {
				for _, m := range c.VolumeMounts {
					dirs = append(dirs, m.MountPath)
				}
			}
			// The patterns are assembled in the shell: the command itself
			// (which Codex keeps in its home) never holds one whole.
			pattern := func(s string) string {
				h := len(s) / 2
				return fmt.Sprintf(`"$(printf %%s%%s '%s' '%s')"`, s[:h], s[h:])
			}
			count := func(name, p string) string {
				return fmt.Sprintf(`echo %s=$( { env; for f in %s; do if [ -d "$f" ]; then find -L "$f" -type f -exec cat {} + ; else cat "$f"; fi; done; } 2>/dev/null | grep -a -c -F -e %s)`,
					name, strings.Join(dirs, " "), p)
			}
			script := strings.Join([]string{
				count("keyhits", pattern(key)),
				count("credhits", `"$(printf 'hmg%s.' 1)"`),
				count("canaryhits", pattern(canary)),
			}, "; ")
			r := harnessCLI("turn", gwSession, "-n", managedNS, "--route-facts", "none", "--prompt", stubmodel.ShellDirective+" "+script)
			Expect(r.exit).To(Equal(0), "%s", r)
			var output string
			for _, o := range stub.FunctionCallOutputs() {
				if strings.Contains(o.Output, "canaryhits=") {
					output = o.Output
				}
			}
			Expect(output).NotTo(BeEmpty(), "the tool's output reached the model")
			Expect(output).To(MatchRegexp(`canaryhits=[1-9]`), "the control: the search finds the canary of the pod's environment")
			Expect(output).To(ContainSubstring("keyhits=0"), "the provider key")
			Expect(output).To(ContainSubstring("credhits=0"), "a sealed credential")
			expectNoCredentialAtStub()
		})

		It("refuses credentials of a turn that ended, of another session and for another model before the upstream; one of a running turn passes", func() {
			// A second session of the harness whose turn the stub holds
			// open: its lease's current grant is what the gateway asks the
			// dispatcher about.
			applyManifest("gw-held-session.yaml", fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentSession
metadata: {name: gw-held, namespace: %s}
spec:
  agentId: main
  sessionKey: agent:main:gw-held
  sessionId: 6b2d8f4e-3c1a-4e7b-9d5f-2a0c1e3b4d6f
  model: openai/gpt-5.5
  runtimeOverride: %s
`, managedNS, gwHarness))
			held := &v1alpha1.AgentSession{}
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: "gw-held"}, held)).To(Succeed())
			other := &v1alpha1.AgentSession{}
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: gwSession}, other)).To(Succeed())
			h := &v1alpha1.AgentHarness{}
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: gwHarness}, h)).To(Succeed())
			model := stub.Requests()[len(stub.Requests())-1].Model
			Expect(model).NotTo(BeEmpty(), "the model Codex names")

			marker := "held-through-the-gateway-" + randomToken()[:12]
			gate := stubmodel.NewGate()
			DeferCleanup(gate.Release)
			stub.When(marker, stubmodel.Text("held answer").HoldBefore(1, gate))
			wait := background(cliEnv(), env.kubectl, "harness", "turn", "gw-held", "-n", managedNS, "--route-facts", "none", "--prompt", marker)
			Eventually(gate.Reached()).WithTimeout(2*time.Minute).Should(BeClosed(), "the turn reached the model")

			gw := newGatewayClient()
			harness := modelcred.Harness{Namespace: managedNS, Name: gwHarness, UID: string(h.UID)}
			mint := func(session *v1alpha1.AgentSession, token int64) string {
				GinkgoHelper()
				cred, err := modelcred.Seal(gw.key, modelcred.Claims{
					Audience: modelcred.Audience, Lease: managedNS + "/" + string(session.UID), Token: token,
					Run: "e2e-minted", Harness: harness, Models: []string{model},
					ExpiresAt: time.Now().Add(10 * time.Minute),
				}, time.Now())
				Expect(err).NotTo(HaveOccurred())
				return cred
			}
			// A grant's token is the journal's epoch above the session's
			// count of grants: this session has had one or a few. Exactly
			// the current one passes.
			epoch := journalLeaseEpoch()
			var passing string
			passed := 0
			for n := int64(1); n <= 4; n++ {
				cred := mint(held, epoch<<32+n)
				before := len(stub.Requests())
				status, body := gw.send(cred, model)
				if status == 200 {
					passed++
					Expect(passed).To(Equal(1), "one grant is current")
					passing = cred
					Expect(stub.Requests()).To(HaveLen(before+1), "the control reached the stub")
					continue
				}
				Expect(status).To(Equal(401), "grant %d: %s", n, body)
				Expect(stub.Requests()).To(HaveLen(before), "grant %d reached the stub", n)
			}
			Expect(passed).To(Equal(1), "the control: the running turn's credential passes")

			expectRefused := func(what, cred, model string, want int) {
				GinkgoHelper()
				before := len(stub.Requests())
				status, body := gw.send(cred, model)
				Expect(status).To(Equal(want), "%s: %s", what, body)
				Expect(body).To(ContainSubstring("harness_model_gateway"), what)
				Expect(stub.Requests()).To(HaveLen(before), "%s reached the stub", what)
			}
			expectRefused("another model", passing, "gpt-not-in-the-policy", 403)
			expectRefused("another session", mint(other, epoch<<32+1), model, 401)

			gate.Release()
			r := wait()
			Expect(r.exit).To(Equal(0), "%s", r)
			// The turn's answer reaches the CLI before the dispatcher has
			// written the session's status and released the lease; the next
			// turn starts only once it has. After that turn the replay is
			// refused for certain.
			r = harnessCLI("turn", "gw-held", "-n", managedNS, "--route-facts", "none", "--prompt", "Say hello")
			Expect(r.exit).To(Equal(0), "%s", r)
			expectRefused("the turn that ended", passing, model, 401)
			expectNoCredentialAtStub()
		})

		It("lets the gateway harness's pod reach the gateway and not the model directly", func() {
			var pod corev1.Pod
			Expect(admin.Get(ctx, client.ObjectKey{Namespace: managedNS, Name: gwPod}, &pod)).To(Succeed())
			var gateways corev1.PodList
			Expect(admin.List(ctx, &gateways, client.InNamespace(operatorNamespace),
				client.MatchingLabels{"app.kubernetes.io/name": "harness-operator", "app.kubernetes.io/component": "model-gateway"})).To(Succeed())
			Expect(gateways.Items).NotTo(BeEmpty())
			Expect(connects(Default, pod, objects.ContainerName, gateways.Items[0].Status.PodIP, 8443)).To(Equal(connOpen), "to the gateway")
			host, port := stubAddress()
			Expect(connects(Default, pod, objects.ContainerName, host, port)).To(Equal(connClosed), "to the model at %s, which the suite's egress allowance admits to other harnesses", host)
		})
	})
}

// gatewayHarness is the harness of the gateway specs: without gateway, its
// own credentials; with it, spec.modelGateway naming the stub behind the TLS
// front and the Secret gateway-key, and a canary in the pod's environment.
func gatewayHarness(replicas int, gateway bool) string {
	repository, digest := image("CODEX_APP_SERVER")
	tail := `    credentials:
      - name: OPENAI_API_KEY
        mount: Env
        secretKeyRef: {name: model-key, key: key}
      - name: config.toml
        mount: HomeFile
        secretKeyRef: {name: codex-config, key: config.toml}
`
	if gateway {
		tail = fmt.Sprintf(`    env:
      - {name: E2E_CANARY, value: %q}
  modelGateway:
    baseURL: %s
    credentialSecretRef: {name: gateway-key, key: key}
`, gatewayCanary, gatewayUpstream)
	}
	return fmt.Sprintf(`apiVersion: harness.openclaw.dev/v1alpha1
kind: AgentHarness
metadata: {name: %s, namespace: %s}
spec:
  adapter: codex-app-server
  autoSelection: {mode: ExplicitOnly}
  appServer:
    image: %s@%s
    imagePullPolicy: Never
    replicas: %d
    storage: {size: 1Gi, storageClassName: %s}
%s`, gwHarness, managedNS, repository, digest, replicas, gwStorageClass, tail)
}

// gatewayUpstream and gatewayCanary carry the upstream's URL and the
// canary from the BeforeAll to the manifest of the gateway's harness.
var gatewayUpstream, gatewayCanary string

// expectNoCredentialAtStub: no request the stub recorded carries a sealed
// credential, in a header or the body.
func expectNoCredentialAtStub() {
	GinkgoHelper()
	for _, req := range stub.Requests() {
		for name, values := range req.Header {
			for _, v := range values {
				Expect(v).NotTo(ContainSubstring(credentialPrefix), "request %d, header %s", req.Seq, name)
			}
		}
		Expect(string(req.Body)).NotTo(ContainSubstring(credentialPrefix), "request %d, body", req.Seq)
	}
}

// serviceIP is the cluster address of a Service of the release.
func serviceIP(name string) string {
	GinkgoHelper()
	var svc corev1.Service
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, &svc)).To(Succeed())
	Expect(svc.Spec.ClusterIP).NotTo(BeEmpty(), "service %s", name)
	return svc.Spec.ClusterIP
}

// podEnv is the first container's literal environment.
func podEnv(pod corev1.Pod) map[string]string {
	out := map[string]string{}
	if len(pod.Spec.Containers) > 0 {
		for _, e := range pod.Spec.Containers[0].Env {
			out[e.Name] = e.Value
		}
	}
	return out
}

// gatewayClient sends model requests to the gateway's Service from the
// suite, with credentials it seals itself with the key the dispatcher and
// the gateway derive from the turn-token Secret.
type gatewayClient struct {
	key    *modelcred.Key
	url    string
	client *http.Client
}

func newGatewayClient() *gatewayClient {
	GinkgoHelper()
	var tokenSecret corev1.Secret
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "harness-dispatcher-turn-token"}, &tokenSecret)).To(Succeed())
	key, err := modelcred.DeriveKey(tokenSecret.Data[turntoken.DataKey])
	Expect(err).NotTo(HaveOccurred())
	var tlsSecret corev1.Secret
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: release + "-dispatcher-tls"}, &tlsSecret)).To(Succeed())
	roots := x509.NewCertPool()
	Expect(roots.AppendCertsFromPEM(tlsSecret.Data["ca.crt"])).To(BeTrue(), "the dispatcher's CA")
	name := release + "-model-gateway"
	return &gatewayClient{
		key: key,
		url: "https://" + net.JoinHostPort(serviceIP(name), "8443") + "/v1/responses",
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: roots, ServerName: name + "." + operatorNamespace + ".svc", MinVersion: tls.VersionTLS12,
		}}},
	}
}

// send posts a Responses request for model with credential and returns the
// status and the body.
func (g *gatewayClient) send(credential, model string) (int, string) {
	GinkgoHelper()
	body := fmt.Sprintf(`{"model":%q,"stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"minted"}]}]}`, model)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Authorization", "Bearer "+credential)
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.client.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(raw)
}

// journalLeaseEpoch is the lease epoch of the dispatcher's journal (its
// file lease-epoch, on the node's volume).
func journalLeaseEpoch() int64 {
	GinkgoHelper()
	var found string
	Expect(filepath.WalkDir(journalDir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "lease-epoch" {
			found = p
		}
		return nil
	})).To(Succeed())
	Expect(found).NotTo(BeEmpty(), "lease-epoch under %s", journalDir())
	raw, err := os.ReadFile(found)
	Expect(err).NotTo(HaveOccurred())
	var rec struct {
		Epoch int64 `json:"epoch"`
	}
	Expect(json.Unmarshal(raw, &rec)).To(Succeed())
	Expect(rec.Epoch).To(BeNumerically(">", 0))
	return rec.Epoch
}
