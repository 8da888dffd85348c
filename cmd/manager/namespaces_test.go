package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// TestHarnessNamespacesNeedOnlyNamespacedSecretAccess runs the manager as a
// user whose Secret access and workload writes are granted by Roles in two
// namespaces only — what the Helm chart grants when harnessNamespaces is
// set — and checks that it becomes ready (its Secret cache lists nothing
// cluster-wide), serves a harness in a harness namespace (token Secret and
// StatefulSet), and reports one elsewhere as not managed.
func TestHarnessNamespacesNeedOnlyNamespacedSecretAccess(t *testing.T) {
	env, err := testutil.StartEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	admin := env.Client
	const operatorNS, teamA, teamB = "harness-operator-system", "team-a", "team-b"
	for _, ns := range []string{operatorNS, teamA, teamB} {
		if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}

	// What the chart grants with harnessNamespaces [team-a]: the generated
	// ClusterRole, and the generated Roles in the operator namespace and team-a.
	restricted := restrictedManager(t, env, operatorNS, teamA)

	probeAddr := freeAddr(t)
	startManager(t, restricted.Config(), options{
		metricsAddr: "0", probeAddr: probeAddr, harnessConcurrency: 1, policyConcurrency: 1, sessionConcurrency: 1,
		gracefulShutdownSecs: 5, operatorNamespace: operatorNS, harnessNamespaces: teamA + ", " + teamA,
		webhook: webhookOptions{mode: "disabled"}, skipNameValidation: true,
	})
	plain := &http.Client{Timeout: 2 * time.Second}
	waitFor(t, "readyz with namespaced Secret access", func() (bool, string) { return get(plain, "http://"+probeAddr+"/readyz", "") })

	for _, ns := range []string{teamA, teamB} {
		mustCreate(t, admin, managedHarness(ns))
	}
	// team-a: the workload's token Secret is written with the Role's grant.
	waitFor(t, "token Secret in team-a", func() (bool, string) {
		var list corev1.SecretList
		if err := admin.List(ctx, &list, client.InNamespace(teamA)); err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 1, fmt.Sprintf("secrets in team-a: %d", len(list.Items))
	})
	// team-a: the workload itself, written with the harness namespaces' Role
	// alone (the ClusterRole only reads workloads).
	waitFor(t, "StatefulSet in team-a", func() (bool, string) {
		var list appsv1.StatefulSetList
		if err := admin.List(ctx, &list, client.InNamespace(teamA)); err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 1, fmt.Sprintf("statefulsets in team-a: %d", len(list.Items))
	})
	// team-b: not served, visibly.
	waitFor(t, "team-b harness reported NamespaceNotManaged", func() (bool, string) {
		var h v1alpha1.AgentHarness
		if err := admin.Get(ctx, types.NamespacedName{Namespace: teamB, Name: "codex"}, &h); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.HarnessConditionReady)
		if c == nil {
			return false, "no Ready condition"
		}
		ok := c.Status == metav1.ConditionFalse && c.Reason == string(v1alpha1.HarnessReasonNamespaceNotManaged) &&
			strings.Contains(c.Message, "team-b is not one of the operator's harness namespaces (team-a; manager flag --harness-namespaces")
		return ok, c.Reason + ": " + c.Message
	})
	var secrets corev1.SecretList
	if err := admin.List(ctx, &secrets, client.InNamespace(teamB)); err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Errorf("the manager created %d Secrets in the unmanaged namespace team-b", len(secrets.Items))
	}
}

// restrictedManager adds a user with exactly what the Helm chart grants the
// manager: the generated ClusterRole bound cluster-wide, the generated Role
// of the operator namespace bound there, and the generated Role of harness
// namespaces (Secrets and the write verbs on workloads) bound in each of
// harnessNamespaces only.
func restrictedManager(t *testing.T, env *testutil.Env, operatorNS string, harnessNamespaces ...string) *envtest.AuthenticatedUser {
	t.Helper()
	admin := env.Client
	user := "restricted-manager-" + strings.Join(append([]string{operatorNS}, harnessNamespaces...), "-")
	clusterRole, roles := generatedManagerRoles(t)
	clusterRole.Name = user
	mustCreate(t, admin, clusterRole)
	mustCreate(t, admin, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})
	bind := func(ns string, rules []rbacv1.PolicyRule) {
		mustCreate(t, admin, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules})
		mustCreate(t, admin, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		})
	}
	operatorRules, harnessRules := roles[generatedOperatorNamespace], roles[generatedHarnessNamespaces]
	if len(operatorRules) == 0 || len(harnessRules) == 0 {
		t.Fatalf("config/rbac/role.yaml has no Role in %s or %s; the test's premise is gone", generatedOperatorNamespace, generatedHarnessNamespaces)
	}
	bind(operatorNS, operatorRules)
	for _, ns := range harnessNamespaces {
		bind(ns, harnessRules)
	}
	restricted, err := env.AddUser(envtest.User{Name: user})
	if err != nil {
		t.Fatal(err)
	}
	return restricted
}

// TestNoHarnessNamespacesNeedSecretAccessOnlyInTheOperatorNamespace: with
// --harness-namespaces empty (no namespace may hold harnesses) the manager
// caches Secrets only in its own namespace, so it becomes ready with Secret
// access granted there alone, never cluster-wide.
func TestNoHarnessNamespacesNeedSecretAccessOnlyInTheOperatorNamespace(t *testing.T) {
	env, err := testutil.StartEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	const operatorNS = "harness-operator-system"
	mustCreate(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNS}})
	restricted := restrictedManager(t, env, operatorNS)

	probeAddr := freeAddr(t)
	done := startManager(t, restricted.Config(), options{
		metricsAddr: "0", probeAddr: probeAddr, harnessConcurrency: 1, policyConcurrency: 1, sessionConcurrency: 1,
		gracefulShutdownSecs: 5, operatorNamespace: operatorNS, harnessNamespaces: "",
		webhook: webhookOptions{mode: "disabled"}, skipNameValidation: true,
	})
	plain := &http.Client{Timeout: 2 * time.Second}
	waitForRun(t, done, "readyz with Secret access only in the operator namespace", func() (bool, string) {
		return get(plain, "http://"+probeAddr+"/readyz", "")
	})
}

func TestRunRefusesAnEmptyOperatorNamespace(t *testing.T) {
	err := run(context.Background(), nil, options{harnessConcurrency: 1, policyConcurrency: 1, sessionConcurrency: 1, webhook: webhookOptions{mode: "disabled"}})
	if err == nil || !strings.Contains(err.Error(), "--operator-namespace must not be empty") {
		t.Fatalf("err = %v, want a message naming --operator-namespace", err)
	}
}

func TestParseNamespaces(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "a, b,,a", want: []string{"a", "b"}},
		{in: "team-a,Team_B", wantErr: `--harness-namespaces: "Team_B" is not a namespace name`},
	} {
		got, err := parseNamespaces("--harness-namespaces", tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseNamespaces(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseNamespaces(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// The namespaces of the generated Roles (config/rbac/role.yaml): the
// operator's own, and a placeholder that stands for each harness namespace.
const (
	generatedOperatorNamespace = "harness-operator-system"
	generatedHarnessNamespaces = "harness-namespaces"
)

// generatedManagerRoles reads config/rbac/role.yaml: the manager's
// ClusterRole, and the rules of its Roles by namespace.
func generatedManagerRoles(t *testing.T) (*rbacv1.ClusterRole, map[string][]rbacv1.PolicyRule) {
	t.Helper()
	raw, err := os.ReadFile("../../config/rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var clusterRole *rbacv1.ClusterRole
	roles := map[string][]rbacv1.PolicyRule{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("parse config/rbac/role.yaml: %v", err)
		}
		switch meta.Kind {
		case "ClusterRole":
			clusterRole = &rbacv1.ClusterRole{}
			if err := yaml.UnmarshalStrict([]byte(doc), clusterRole); err != nil {
				t.Fatalf("parse config/rbac/role.yaml: %v", err)
			}
		case "Role":
			var role rbacv1.Role
			if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
				t.Fatalf("parse config/rbac/role.yaml: %v", err)
			}
			roles[role.Namespace] = append(roles[role.Namespace], role.Rules...)
		}
	}
	if clusterRole == nil {
		t.Fatal("config/rbac/role.yaml has no ClusterRole")
	}
	return clusterRole, roles
}

func managedHarness(namespace string) *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Name: "codex", Namespace: namespace},
		Spec: v1alpha1.AgentHarnessSpec{
			Adapter:   v1alpha1.AdapterCodexAppServer,
			AppServer: &v1alpha1.AppServerWorkload{Image: "codex@sha256:" + strings.Repeat("a", 64)},
		},
	}
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}
