//go:build e2e

package chart

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// TestNoClusterRoleGrantsSecrets: neither by default nor with
// harnessNamespaces set does any rendered ClusterRole carry a rule on
// Secrets, so no binding of one can give the manager or the dispatcher (or a
// user) Secrets cluster-wide. With harnessNamespaces [team-a, team-b] each
// namespace gets the manager's and the dispatcher's Secret Role, bound to
// exactly that component's ServiceAccount; by default no namespace besides
// the release namespace has one.
func TestNoClusterRoleGrantsSecrets(t *testing.T) {
	secretRoles := map[string]struct {
		sa    string
		verbs []string
	}{
		fullname + "-manager-secrets":    {fullname + "-manager", []string{"create", "delete", "get", "list", "patch", "watch"}},
		fullname + "-dispatcher-secrets": {fullname + "-dispatcher", []string{"get"}},
	}
	for _, c := range []struct {
		valueSet   string
		namespaces []string
	}{
		{"defaults", nil},
		{"harness-namespaces", []string{"team-a", "team-b"}},
	} {
		t.Run(c.valueSet, func(t *testing.T) {
			r := renderRBAC(t, objectsOf(t, c.valueSet))
			for name, cr := range r.clusterRoles {
				for _, rule := range cr.Rules {
					if slices.Contains(rule.Resources, "secrets") {
						t.Errorf("ClusterRole %s has a rule on secrets: %+v", name, rule)
					}
				}
			}
			for k, role := range r.roles {
				if role.Namespace == releaseNamespace {
					continue
				}
				_, secretRole := secretRoles[role.Name]
				workloadRole := role.Name == fullname+"-manager-workloads" // TestManagerWritesWorkloadsOnlyInHarnessNamespaces
				if !secretRole && !workloadRole || !slices.Contains(c.namespaces, role.Namespace) {
					t.Errorf("Role %s is rendered outside the release namespace and harnessNamespaces %v", k, c.namespaces)
				}
			}
			for _, ns := range c.namespaces {
				for name, want := range secretRoles {
					role, ok := r.roles[key(ns, name)]
					if !ok {
						t.Errorf("no Role %s in %s", name, ns)
						continue
					}
					wantRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: want.verbs}}
					if !equality.Semantic.DeepEqual(role.Rules, wantRules) {
						t.Errorf("Role %s/%s rules %+v, want %+v", ns, name, role.Rules, wantRules)
					}
					i := slices.IndexFunc(r.roleBindings, func(b rbacv1.RoleBinding) bool { return b.Namespace == ns && b.Name == name })
					if i < 0 {
						t.Errorf("no RoleBinding %s in %s", name, ns)
						continue
					}
					b := r.roleBindings[i]
					wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: want.sa, Namespace: releaseNamespace}}
					if b.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}) || !equality.Semantic.DeepEqual(b.Subjects, wantSubjects) {
						t.Errorf("RoleBinding %s/%s: roleRef %+v, subjects %+v; want Role %s bound to %+v", ns, name, b.RoleRef, b.Subjects, name, wantSubjects)
					}
				}
			}
		})
	}
}

// TestCLIRoles: `kubectl harness` users get <fullname>-cli — sessions, the
// token of harness-cli only (by name), and the dispatcher Service's proxy by
// name — and the harness-cli ServiceAccount, which the chart renders in each
// of cli.serviceAccountNamespaces, gets only the turn API. Nothing renders
// harness-cli by default.
func TestCLIRoles(t *testing.T) {
	r := renderRBAC(t, objectsOf(t, "defaults"))
	want := map[string][]rbacv1.PolicyRule{
		fullname + "-cli": {
			{APIGroups: []string{"harness.openclaw.dev"}, Resources: []string{"agentsessions"}, Verbs: []string{"get", "list", "watch", "create", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, ResourceNames: []string{"harness-cli"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"list"}},
			{APIGroups: []string{""}, Resources: []string{"services/proxy"}, ResourceNames: []string{"https:" + fullname + "-dispatcher:https"}, Verbs: []string{"create", "get"}},
		},
		fullname + "-cli-serviceaccount": {
			{APIGroups: []string{"harness.openclaw.dev"}, Resources: []string{"agentsessions/turns"}, Verbs: []string{"create", "get"}},
		},
	}
	for name, rules := range want {
		got, ok := r.clusterRoles[name]
		if !ok {
			t.Errorf("ClusterRole %s is not rendered", name)
			continue
		}
		if !equality.Semantic.DeepEqual(got.Rules, rules) {
			a, _ := yaml.Marshal(got.Rules)
			b, _ := yaml.Marshal(rules)
			t.Errorf("ClusterRole %s rules:\n%s\nwant:\n%s", name, a, b)
		}
	}
	for _, o := range objectsOf(t, "defaults") {
		if o.Name == "harness-cli" {
			t.Errorf("%s %s rendered without cli.serviceAccountNamespaces", o.Kind, key(o.Namespace, o.Name))
		}
	}

	objs := objects(t, writeValues(t, "cli:\n  serviceAccountNamespaces: [team-a, team-b]\n"))
	r = renderRBAC(t, objs)
	for _, ns := range []string{"team-a", "team-b"} {
		var sa corev1.ServiceAccount
		find(t, objs, "ServiceAccount", ns, "harness-cli").decode(t, &sa)
		if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			t.Errorf("ServiceAccount %s/harness-cli mounts its token into pods", ns)
		}
		i := slices.IndexFunc(r.roleBindings, func(b rbacv1.RoleBinding) bool { return b.Namespace == ns && b.Name == fullname+"-cli-serviceaccount" })
		if i < 0 {
			t.Fatalf("no RoleBinding %s-cli-serviceaccount in %s", fullname, ns)
		}
		b := r.roleBindings[i]
		wantSubjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "harness-cli", Namespace: ns}}
		if b.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: fullname + "-cli-serviceaccount"}) || !equality.Semantic.DeepEqual(b.Subjects, wantSubjects) {
			t.Errorf("RoleBinding %s/%s: roleRef %+v, subjects %+v", ns, b.Name, b.RoleRef, b.Subjects)
		}
	}
}

// TestNetworkPoliciesOnByDefault asserts the rendered policies of the
// defaults (the test clusters' network plugins do not enforce them, so this
// is what can be proved): the manager admits its webhook port from anywhere
// and its metrics from the metrics namespaces; the dispatcher admits its API
// only from namespaces labelled as dispatcher clients and its metrics from
// the metrics namespaces; each selects exactly its component's pods and
// restricts ingress.
func TestNetworkPoliciesOnByDefault(t *testing.T) {
	objs := objectsOf(t, "defaults")
	tcp := corev1.ProtocolTCP
	port := func(p int) []networkingv1.NetworkPolicyPort {
		return []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(int32(p))), Protocol: &tcp}}
	}
	everyNamespace := []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}
	want := map[string][]networkingv1.NetworkPolicyIngressRule{
		"manager": {
			{Ports: port(9443)},
			{From: everyNamespace, Ports: port(8443)},
		},
		"dispatcher": {
			{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"harness.openclaw.dev/dispatcher-client": "true"},
			}}}, Ports: port(8443)},
			// The HTTPS metrics, not the probe port (8081).
			{From: everyNamespace, Ports: port(8083)},
		},
	}
	for component, ingress := range want {
		var np networkingv1.NetworkPolicy
		find(t, objs, "NetworkPolicy", releaseNamespace, fullname+"-"+component).decode(t, &np)
		d := deployment(t, objs, fullname+"-"+component)
		if !equality.Semantic.DeepEqual(np.Spec.PodSelector.MatchLabels, d.Spec.Selector.MatchLabels) || len(np.Spec.PodSelector.MatchExpressions) != 0 {
			t.Errorf("%s NetworkPolicy selects %+v, want the Deployment's pods %v", component, np.Spec.PodSelector, d.Spec.Selector.MatchLabels)
		}
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("%s NetworkPolicy policyTypes %v, want [Ingress]", component, np.Spec.PolicyTypes)
		}
		if !equality.Semantic.DeepEqual(np.Spec.Ingress, ingress) {
			a, _ := yaml.Marshal(np.Spec.Ingress)
			b, _ := yaml.Marshal(ingress)
			t.Errorf("%s NetworkPolicy ingress:\n%s\nwant:\n%s", component, a, b)
		}
	}
	off := objects(t, writeValues(t, "networkPolicy:\n  enabled: false\n"))
	for _, o := range off {
		if o.Kind == "NetworkPolicy" {
			t.Errorf("networkPolicy.enabled=false still renders NetworkPolicy %s", key(o.Namespace, o.Name))
		}
	}
}
