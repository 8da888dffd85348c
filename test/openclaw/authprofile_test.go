//go:build e2e

package openclaw

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// profileAgent is the OpenClaw agent of the auth profile specs: its auth
// store (an agent directory of its own) holds the profile, so the other
// specs' agent (main) never sees it.
const profileAgent = "profiled"

// The contract: core "forwards a compatible, explicitly selected or ordered
// OpenClaw auth profile", and the harness must "keep secrets scoped to the
// attempt". The plugin sends the profile's key inline with the turn; the
// cluster uses it for the model requests and keeps it nowhere: not in the
// AgentSession, not in the namespace's Events, not in any file of the
// local system (the dispatcher's and the manager's log, the journal, the
// app-server's home, etcd's data).
var _ = Describe("An OpenClaw auth profile selected for a cluster turn", Ordered, func() {
	const profileID = "openai:work"
	var (
		profiled *openClaw
		key      string
	)
	BeforeAll(func(ctx context.Context) {
		key = "sk-e2e-profile-" + randomHex() + randomHex()
		profiled = gateway.withAuthProfile(ctx, profileAgent, profileID, key)
	})

	It("sends the profile's key with the turn to the model, and it appears nowhere else", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		reply := "Profile reply " + marker
		stub.When(marker, stubmodel.Text(reply))
		suffix := randomHex()
		id, sessionKey := "OpenClaw_E2E-"+suffix, "agent:"+profileAgent+":e2e-"+suffix

		run := profiled.turn(ctx, id, sessionKey, "Say hello "+marker, "--agent", profileAgent)

		Expect(run.exit).To(Equal(0), "%s", run)
		Expect(run.result().texts()).To(ContainElement(ContainSubstring(reply)), "%s", run)
		Expect(run.result().Meta.AgentMeta.AgentHarnessID).To(Equal(pluginID), "%s", run)
		reqs := stub.RequestsContaining(marker)
		Expect(reqs).To(HaveLen(1), "one model request, from the cluster's Codex")
		Expect(reqs[0].Header.Get("Authorization")).To(Equal("Bearer "+key), "the cluster's model request carried the profile's key")

		sess := sessionOf(ctx, id)
		Expect(sess.Status.NativeBinding).NotTo(BeNil())
		Expect(sess.Status.NativeBinding.AuthProfile).To(Equal(profileID), "the status names the profile, not its key")

		raw, err := json.Marshal(sess)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(key), "the AgentSession")
		events := &corev1.EventList{}
		Expect(k8s.List(ctx, events, client.InNamespace(agentsNS))).To(Succeed())
		raw, err = json.Marshal(events)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(key), "the namespace's Events")
		Expect(filesUnder(cluster.dir, key)).To(BeEmpty(), "files of the local system hold the key")
		// The control: the same search finds the turn, by its session, in
		// the files the dispatcher writes.
		Expect(filesUnder(cluster.dir, sess.Name)).NotTo(BeEmpty(), "control: the local system's files record the turn")
		Expect(run.stdout+run.stderr).NotTo(ContainSubstring(key), "OpenClaw's output")
	})

	// The control: the same gateway's agent without a profile runs on the
	// harness's own credential.
	It("runs a turn of an agent without profile on the harness's own credential", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		stub.When(marker, stubmodel.Text("Plain reply "+marker))
		suffix := randomHex()

		run := gateway.turn(ctx, "OpenClaw_E2E-"+suffix, "agent:main:e2e-"+suffix, "Say hello "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		reqs := stub.RequestsContaining(marker)
		Expect(reqs).NotTo(BeEmpty(), "%s", run)
		for _, r := range reqs {
			// devcluster's Codex authenticates with a key of its own.
			Expect(r.Header.Get("Authorization")).To(MatchRegexp(`^Bearer \S+$`), "the harness's own credential")
			Expect(r.Header.Get("Authorization")).NotTo(ContainSubstring(key))
		}
		Expect(sessionOf(ctx, "OpenClaw_E2E-"+suffix).Status.NativeBinding.AuthProfile).To(BeEmpty())
	})
})

// withAuthProfile is the same gateway (its HOME, the installed plugin) with
// a config of its own that adds agent, whose auth store holds an API-key
// auth profile id with key, first in the openai provider's auth order. The
// key is written as a platform team would, with `openclaw models auth
// paste-api-key` reading it from stdin.
func (o *openClaw) withAuthProfile(ctx context.Context, agent, id, key string) *openClaw {
	GinkgoHelper()
	b, err := os.ReadFile(o.configPath())
	Expect(err).NotTo(HaveOccurred())
	var cfg map[string]any
	Expect(json.Unmarshal(b, &cfg)).To(Succeed())
	agents := cfg["agents"].(map[string]any)
	agents["entries"] = map[string]any{agent: map[string]any{"agentDir": filepath.Join(GinkgoT().TempDir(), "agent")}}
	cfg["auth"] = map[string]any{
		"profiles": map[string]any{id: map[string]any{"provider": "openai", "mode": "api_key"}},
		"order":    map[string]any{"openai": []string{id}},
	}
	b, err = json.MarshalIndent(cfg, "", "  ")
	Expect(err).NotTo(HaveOccurred())
	other := *o
	other.config = filepath.Join(GinkgoT().TempDir(), "openclaw.json")
	Expect(os.WriteFile(other.config, b, 0o600)).To(Succeed())

	ctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(o.tools, "bin", "openclaw"),
		"models", "auth", "paste-api-key", "--provider", "openai", "--profile-id", id, "--agent", agent)
	cmd.Env = other.environ()
	cmd.Dir = o.home
	cmd.Stdin = strings.NewReader(key + "\n")
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "openclaw models auth paste-api-key:\n%s", out)
	AddReportEntry("openclaw models auth paste-api-key", string(out))
	return &other
}

// sessionOf waits for the AgentSession of OpenClaw's session id with its
// turn recorded (the plugin returns at the `result` event, which the
// dispatcher streams before the turn's status).
func sessionOf(ctx context.Context, id string) *v1alpha1.AgentSession {
	GinkgoHelper()
	var found *v1alpha1.AgentSession
	Eventually(func(g Gomega) {
		list := &v1alpha1.AgentSessionList{}
		g.Expect(k8s.List(ctx, list, client.InNamespace(agentsNS))).To(Succeed())
		found = nil
		for i := range list.Items {
			if list.Items[i].Spec.SessionID == id {
				found = &list.Items[i]
			}
		}
		g.Expect(found).NotTo(BeNil())
		g.Expect(found.Status.LastTurn).NotTo(BeNil())
	}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "the AgentSession of OpenClaw's session %s with its turn recorded", id)
	return found
}

// filesUnder lists the regular files under dir whose content contains s.
func filesUnder(dir, s string) []string {
	GinkgoHelper()
	var found []string
	Expect(filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // a file a running process removed meanwhile
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if strings.Contains(string(b), s) {
			found = append(found, p)
		}
		return nil
	})).To(Succeed())
	return found
}
