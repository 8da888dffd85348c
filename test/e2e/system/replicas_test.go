//go:build e2e

package system

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
	"github.com/openclaw/harness-operator/internal/testutil/turnload"
)

// replicaSpecs are the many-dispatchers fault campaign (docs/reliability.md)
// on the chart's Deployment: the
// release moves to PostgreSQL (a real server on this machine, on the
// bridge's gateway where the Pods reach it) and three dispatcher Pods; 20
// sessions run turns without pause against the Pods' own addresses (the
// gateways of internal/testutil/turnload, round robin; this machine reaches the pod
// network through the bridge) while every Pod is evicted in turn — the PDB
// lets one go at a time, the next once its replacement is Ready — and then
// one Pod's dispatcher is SIGKILLed.
func replicaSpecs() {
	It("serves every session from three dispatcher Pods on PostgreSQL through a rolling restart and a SIGKILL, losing no turn and running none twice", func() {
		const dbSecret = "dispatcher-db"
		podCIDR := requireEnv("LOCAL_CLUSTER_POD_CIDR", "the pod network's range (hack/local-cluster.sh env)")
		requireEnv(pgtest.EnvDir, "the PostgreSQL binaries (hack/setup-postgres.sh)")
		pg := pgtest.StartListening(suiteT, env.gateway, podCIDR)
		// Created with the API, not kubectl: the connection string holds the
		// password, which the suite never prints.
		Expect(admin.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: dbSecret},
			StringData: map[string]string{"uri": pg.NewDatabase(suiteT)},
		})).To(Succeed())
		r := helm("upgrade", release, "charts/harness-operator", "--namespace", operatorNamespace, "--reuse-values",
			"--set", "dispatcher.store.type=postgres", "--set", "dispatcher.store.postgres.secretName="+dbSecret,
			"--set", "dispatcher.replicas=3", "--wait", "--timeout", "5m")
		Expect(r.exit).To(Equal(0), "helm upgrade:\n%s", r)
		mustKubectl("rollout", "status", "deployment/"+release+"-dispatcher", "-n", operatorNamespace, "--timeout=5m")

		var deploy appsv1.Deployment
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: release + "-dispatcher"}, &deploy)).To(Succeed())
		Expect(deploy.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		var pdb policyv1.PodDisruptionBudget
		Expect(admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: release + "-dispatcher"}, &pdb)).To(Succeed())
		Expect(pdb.Spec.MaxUnavailable).NotTo(BeNil())
		Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1))
		_, dispatcherDigest := image("DISPATCHER")
		pods := readyDispatcherPods(Default, nil)
		Expect(pods).To(HaveLen(3))
		for _, p := range pods {
			expectRunsImage(p, dispatcherDigest)
		}

		// 20 sessions on the sample harness, and the gateways' credential: a
		// token of harness-cli (granted turns in agents) for the dispatcher's
		// audience.
		names := make([]string, 20)
		for i := range names {
			names[i] = "ha-" + strconv.Itoa(i)
			Expect(admin.Create(ctx, &v1alpha1.AgentSession{
				ObjectMeta: metav1.ObjectMeta{Namespace: agentsNS, Name: names[i]},
				Spec: v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:" + names[i],
					SessionID: fmt.Sprintf("4d0c0000-0000-4000-8000-%012d", i), Model: "openai/gpt-5.5", RuntimeOverride: "codex"},
			})).To(Succeed())
		}
		token, err := testutil.ServiceAccountToken(ctx, admin, cs, agentsNS, "harness-cli", "harness-dispatcher")
		Expect(err).NotTo(HaveOccurred())
		load := turnload.New(stub, token)
		replicaOf := dispatcherReplicas()
		seen := map[string]bool{}
		for _, p := range pods {
			seen[p.Name] = true
			load.Add(replicaOf(p))
		}
		load.Start(ctx, names...)
		DeferCleanup(load.Stop)

		// The rolling restart, as a node drain does it: an eviction (the
		// PDB's decision) per Pod, SIGTERM from the kubelet, the next once
		// the ReplicaSet's replacement is Ready.
		restartStart := time.Now()
		for _, old := range pods {
			Expect(load.WaitRunning(old.Name, 2, 2*time.Minute)).To(Succeed())
			load.Remove(old.Name) // the Pod leaves the Service's endpoints: no new turns
			running := len(load.RunningOn(old.Name))
			Expect(cs.PolicyV1().Evictions(operatorNamespace).Evict(ctx, &policyv1.Eviction{
				ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: old.Name},
			})).To(Succeed(), "the PDB lets one Pod go")
			GinkgoWriter.Printf("evicted %s with %d turns running on it\n", old.Name, running)
			Expect(running).To(BeNumerically(">=", 1), "the evicted replica ran turns")
			var replacement corev1.Pod
			Eventually(func(g Gomega) {
				fresh := readyDispatcherPods(g, seen)
				g.Expect(fresh).NotTo(BeEmpty(), "a replacement is Ready")
				replacement = fresh[0]
			}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
			seen[replacement.Name] = true
			load.Add(replicaOf(replacement))
		}
		restartTook := time.Since(restartStart)
		afterRestart := load.Outcomes()

		// A crash: the dispatcher process of one Pod is SIGKILLed (the
		// kubelet then restarts its container); the turns it ran end
		// failed once the survivors sweep them or the restarted process
		// recovers them, whichever comes first.
		victim := load.Replicas()[0].Name
		Expect(load.WaitRunning(victim, 2, 2*time.Minute)).To(Succeed())
		load.Remove(victim)
		doomed, err := load.RunningOnSettled(victim, time.Minute)
		Expect(err).NotTo(HaveOccurred())
		killed := time.Now()
		Expect(syscall.Kill(dispatcherPID(victim), syscall.SIGKILL)).To(Succeed())
		Expect(load.WaitEnded(doomed, 2*time.Minute)).To(Succeed())
		endedIn := time.Since(killed)

		load.Stop()
		v := turnload.Judge(turnload.Campaign{
			AfterRestart: afterRestart, All: load.Outcomes(), Doomed: doomed, Sent: load.Sent(),
			Executions: turnload.Executions(stub),
		})
		Expect(v.Violations).To(BeEmpty())
		figures := fmt.Sprintf("rolling restart of 3 dispatcher Pods in %s: %d turns, 0 failed; SIGKILL with %d turns running: %d failed (replaySafe false) within %s of the kill; %d turns in all, none lost, none run twice",
			restartTook.Round(time.Second), len(afterRestart), len(doomed), v.FailedDoomed, endedIn.Round(time.Second), v.Turns)
		GinkgoWriter.Println(figures)
		AddReportEntry("dispatcher replicas on PostgreSQL", figures)
	})
}

// readyDispatcherPods are the dispatcher's Ready Pods not being deleted,
// leaving out the names in except.
func readyDispatcherPods(g Gomega, except map[string]bool) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(admin.List(ctx, &pods, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "harness-operator", "app.kubernetes.io/component": "dispatcher"})).To(Succeed())
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || except[p.Name] || p.Status.PodIP == "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, p)
			}
		}
	}
	return out
}

// dispatcherReplicas returns how the gateways reach one dispatcher Pod: at
// its own address, verifying the certificate against the dispatcher's CA
// for the Service's name (which every replica serves).
func dispatcherReplicas() func(corev1.Pod) turnload.Replica {
	GinkgoHelper()
	var tlsSecret corev1.Secret
	Expect(admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: release + "-dispatcher-tls"}, &tlsSecret)).To(Succeed())
	caFile := filepath.Join(work, "dispatcher-ca.crt")
	Expect(os.WriteFile(caFile, tlsSecret.Data["ca.crt"], 0o600)).To(Succeed())
	return func(p corev1.Pod) turnload.Replica {
		transport, err := testutil.TrustingTransport(caFile)
		Expect(err).NotTo(HaveOccurred())
		transport.TLSClientConfig.ServerName = release + "-dispatcher." + operatorNamespace + ".svc"
		return turnload.Replica{
			Name:   p.Name,
			Base:   "https://" + net.JoinHostPort(p.Status.PodIP, "8443") + "/v1/namespaces/" + agentsNS + "/agentsessions",
			Client: &http.Client{Transport: transport},
		}
	}
}

// dispatcherPID finds the dispatcher process of a Pod on this machine (the
// node): the process named dispatcher whose environment has the Pod's name
// (the chart's POD_NAME).
func dispatcherPID(pod string) int {
	GinkgoHelper()
	procs, err := filepath.Glob("/proc/[0-9]*")
	Expect(err).NotTo(HaveOccurred())
	want := []byte("POD_NAME=" + pod + "\x00")
	var found []int
	for _, dir := range procs {
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || string(bytes.TrimSpace(comm)) != "dispatcher" {
			continue
		}
		environ, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, environ...), append([]byte{0}, want...)) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(dir))
		Expect(err).NotTo(HaveOccurred())
		found = append(found, pid)
	}
	Expect(found).To(HaveLen(1), "one dispatcher process of pod %s", pod)
	return found[0]
}
