package v1alpha1_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// getTable reads a collection through the Table API, as `kubectl get` does.
func getTable(path string) *metav1.Table {
	GinkgoHelper()
	httpClient, err := rest.HTTPClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	var table metav1.Table
	Expect(json.Unmarshal(body, &table)).To(Succeed())
	return &table
}

func columnNames(t *metav1.Table) []string {
	names := make([]string, 0, len(t.ColumnDefinitions))
	for _, c := range t.ColumnDefinitions {
		names = append(names, c.Name)
	}
	return names
}

// rowFor returns the cells of the row named name, by column name.
func rowFor(t *metav1.Table, name string) map[string]any {
	GinkgoHelper()
	cols := columnNames(t)
	for _, r := range t.Rows {
		if r.Cells[0] == name {
			row := map[string]any{}
			for i, c := range r.Cells {
				row[cols[i]] = c
			}
			return row
		}
	}
	Fail(fmt.Sprintf("no row %q", name))
	return nil
}

// condition is a status condition as a controller would write it.
func condition(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.Now()}
}

var _ = Describe("kubectl get", func() {
	It("serves the short names ah, rp and asess in the openclaw category", func() {
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		list, err := dc.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
		Expect(err).NotTo(HaveOccurred())
		shortNames := map[string][]string{}
		namespaced := map[string]bool{}
		for _, r := range list.APIResources {
			if r.Kind != "" && len(r.ShortNames) > 0 {
				shortNames[r.Name] = r.ShortNames
				namespaced[r.Name] = r.Namespaced
				Expect(r.Categories).To(ContainElement("openclaw"), r.Name)
			}
		}
		Expect(shortNames).To(Equal(map[string][]string{
			"agentharnesses": {"ah"}, "runtimepolicies": {"rp"}, "agentsessions": {"asess"},
		}))
		Expect(namespaced).To(Equal(map[string]bool{
			"agentharnesses": true, "runtimepolicies": false, "agentsessions": true,
		}))
	})

	It("shows HarnessID, Adapter, Version, Ready with its reason and Replicas for AgentHarness", func() {
		ns := newNamespace()
		h := validExternalHarness(ns, "printed")
		Expect(k8sClient.Create(ctx, h)).To(Succeed())
		h.Status = v1alpha1.AgentHarnessStatus{
			Version: "0.169.0", Replicas: 1, ReadyReplicas: 1,
			// Ready is not the first condition, and another condition has the other status.
			Conditions: []metav1.Condition{
				condition(v1alpha1.HarnessConditionWorkloadReady, metav1.ConditionFalse, "NoReadyPods"),
				condition(v1alpha1.HarnessConditionReady, metav1.ConditionTrue, string(v1alpha1.HarnessReasonReady)),
			},
		}
		Expect(k8sClient.Status().Update(ctx, h)).To(Succeed())

		table := getTable("/apis/harness.openclaw.dev/v1alpha1/namespaces/" + ns + "/agentharnesses")
		Expect(columnNames(table)).To(Equal([]string{"Name", "HarnessID", "Adapter", "Version", "Ready", "Reason", "Replicas", "Age"}))
		row := rowFor(table, "printed")
		Expect(row).To(HaveKeyWithValue("HarnessID", "codex"))
		Expect(row).To(HaveKeyWithValue("Adapter", "codex-app-server"))
		Expect(row).To(HaveKeyWithValue("Version", "0.169.0"))
		Expect(row).To(HaveKeyWithValue("Ready", "True"))
		Expect(row).To(HaveKeyWithValue("Reason", string(v1alpha1.HarnessReasonReady)), "Ready's own reason, not another condition's")
		Expect(row).To(HaveKeyWithValue("Replicas", BeNumerically("==", 1)))
	})

	It("shows Providers, Models, Overrides and Accepted with its reason for RuntimePolicy", func() {
		p := validPolicy("printed-" + rand.String(6))
		p.Spec.Models = []v1alpha1.ModelRuntimePolicy{{Ref: "anthropic/claude-opus-5", Runtime: "claude-cli"}}
		p.Spec.SessionOverrides = v1alpha1.SessionOverridesDeny
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		// Accepted is not the first condition, and another condition has the other status.
		p.Status.Conditions = []metav1.Condition{
			condition(v1alpha1.PolicyConditionConflicted, metav1.ConditionTrue, string(v1alpha1.PolicyReasonOlderPolicyWins)),
			condition(v1alpha1.PolicyConditionAccepted, metav1.ConditionFalse, string(v1alpha1.PolicyReasonInvalid)),
		}
		Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())

		table := getTable("/apis/harness.openclaw.dev/v1alpha1/runtimepolicies")
		Expect(columnNames(table)).To(Equal([]string{"Name", "Providers", "Models", "Overrides", "Accepted", "Reason", "Age"}))
		row := rowFor(table, p.Name)
		Expect(row).To(HaveKeyWithValue("Providers", "openai"))
		Expect(row).To(HaveKeyWithValue("Models", "anthropic/claude-opus-5"))
		Expect(row).To(HaveKeyWithValue("Overrides", "Deny"))
		Expect(row).To(HaveKeyWithValue("Accepted", "False"))
		Expect(row).To(HaveKeyWithValue("Reason", string(v1alpha1.PolicyReasonInvalid)))
	})

	It("shows Model, Runtime, Harness, Turns and Ready with its reason for AgentSession", func() {
		ns := newNamespace()
		s := validSession(ns, "printed")
		Expect(k8sClient.Create(ctx, s)).To(Succeed())
		s.Status.Policy = &v1alpha1.SessionPolicy{Runtime: "codex", Source: v1alpha1.PolicySourceProvider}
		s.Status.AgentHarnessID = "codex"
		s.Status.Counters = &v1alpha1.SessionCounters{Turns: 3}
		// Ready is not the first condition, and another condition has the other status.
		s.Status.Conditions = []metav1.Condition{
			condition(v1alpha1.SessionConditionPolicyResolved, metav1.ConditionTrue, string(v1alpha1.SessionReasonPolicyMatched)),
			condition(v1alpha1.SessionConditionReady, metav1.ConditionFalse, string(v1alpha1.SessionReasonOverrideDenied)),
		}
		Expect(k8sClient.Status().Update(ctx, s)).To(Succeed())

		table := getTable("/apis/harness.openclaw.dev/v1alpha1/namespaces/" + ns + "/agentsessions")
		Expect(columnNames(table)).To(Equal([]string{"Name", "Model", "Runtime", "Harness", "Turns", "Ready", "Reason", "Age"}))
		row := rowFor(table, "printed")
		Expect(row).To(HaveKeyWithValue("Model", "openai/gpt-5.5"))
		Expect(row).To(HaveKeyWithValue("Runtime", "codex"))
		Expect(row).To(HaveKeyWithValue("Harness", "codex"))
		Expect(row).To(HaveKeyWithValue("Turns", BeNumerically("==", 3)))
		Expect(row).To(HaveKeyWithValue("Ready", "False"))
		Expect(row).To(HaveKeyWithValue("Reason", string(v1alpha1.SessionReasonOverrideDenied)))
	})
})
