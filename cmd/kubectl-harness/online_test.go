package main

import (
	"encoding/json"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/cli/manifest"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// TestExplainReadsTheCluster runs `explain` without --offline against a real
// kube-apiserver: objects come from the kubeconfig, and a harness the manager
// has not reported Ready is unavailable (retryable), never a fallback.
func TestExplainReadsTheCluster(t *testing.T) {
	t.Parallel() // a control plane of its own (startCluster)
	te, kubeconfigPath := startCluster(t)
	c := te.Client

	objs, err := manifest.ReadPath(samples)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}

	explain := func() (wire.Decision, int) {
		t.Helper()
		stdout, stderr, exit := runCLI(t, nil, "explain", "--kubeconfig", kubeconfigPath, "-n", "agents",
			"--attempt", attempts+"/openai-demo.json", "-o", "json")
		var d wire.Decision
		if err := json.Unmarshal([]byte(stdout), &d); err != nil {
			t.Fatalf("decode decision (exit %d, stderr %s): %v\n%s", exit, stderr, err, stdout)
		}
		return d, exit
	}

	d, exit := explain()
	if exit != exitFailClosed || d.Error == nil || d.Error.Code != wire.CodeHarnessUnavailable || !d.Error.Retryable {
		t.Fatalf("unobserved harness: exit %d, decision %+v; want exit 3 with retryable HarnessUnavailable", exit, d)
	}

	var h v1alpha1.AgentHarness
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "agents", Name: "codex"}, &h); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	h.Status.Conditions = []metav1.Condition{
		{Type: v1alpha1.HarnessConditionWorkloadReady, Status: metav1.ConditionTrue, Reason: string(v1alpha1.HarnessReasonProbeSucceeded), LastTransitionTime: now},
		{Type: v1alpha1.HarnessConditionVersionSupported, Status: metav1.ConditionTrue, Reason: string(v1alpha1.HarnessReasonVersionAccepted), LastTransitionTime: now},
		{Type: v1alpha1.HarnessConditionReady, Status: metav1.ConditionTrue, Reason: string(v1alpha1.HarnessReasonReady), LastTransitionTime: now},
	}
	if err := c.Status().Update(t.Context(), &h); err != nil {
		t.Fatal(err)
	}
	d, exit = explain()
	if exit != exitOK || d.Runtime != "codex" || d.RuntimeSource != v1alpha1.RuntimeSourceProvider {
		t.Fatalf("ready harness: exit %d, decision %+v; want codex from the provider policy", exit, d)
	}
}
