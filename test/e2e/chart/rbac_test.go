//go:build e2e

package chart

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/internal/manager/webhook"
)

// grant is one (apiGroup, resource, verb) allowed in a namespace ("" means
// cluster-wide), optionally only for some object names.
type grant struct {
	group, resource, verb, namespace string
	names                            []string // empty: every name
}

func (g grant) String() string {
	s := fmt.Sprintf("%s %s/%s", g.verb, g.group, g.resource)
	if g.group == "" {
		s = fmt.Sprintf("%s core/%s", g.verb, g.resource)
	}
	if len(g.names) > 0 {
		s += " " + strings.Join(g.names, ",")
	}
	if g.namespace != "" {
		s += " in " + g.namespace
	}
	return s
}

// expand lists the grants of rules in a namespace.
func expand(rules []rbacv1.PolicyRule, namespace string) []grant {
	var out []grant
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, grant{group: g, resource: res, verb: v, namespace: namespace, names: r.ResourceNames})
				}
			}
		}
	}
	return out
}

// covers reports whether have allows what want asks for.
func covers(have, want grant) bool {
	if have.group != want.group || have.resource != want.resource || have.verb != want.verb {
		return false
	}
	if have.namespace != "" && have.namespace != want.namespace {
		return false
	}
	if len(have.names) == 0 {
		return true
	}
	if len(want.names) == 0 {
		return false
	}
	for _, n := range want.names {
		if !slices.Contains(have.names, n) {
			return false
		}
	}
	return true
}

// rendered holds the RBAC objects of one render.
type rendered struct {
	clusterRoles        map[string]rbacv1.ClusterRole
	roles               map[string]rbacv1.Role // by namespace/name
	clusterRoleBindings []rbacv1.ClusterRoleBinding
	roleBindings        []rbacv1.RoleBinding
}

func renderRBAC(t *testing.T, objs []object) rendered {
	t.Helper()
	r := rendered{clusterRoles: map[string]rbacv1.ClusterRole{}, roles: map[string]rbacv1.Role{}}
	for _, o := range objs {
		switch o.Kind {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			o.decode(t, &cr)
			r.clusterRoles[cr.Name] = cr
		case "Role":
			var role rbacv1.Role
			o.decode(t, &role)
			r.roles[key(role.Namespace, role.Name)] = role
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			o.decode(t, &b)
			r.clusterRoleBindings = append(r.clusterRoleBindings, b)
		case "RoleBinding":
			var b rbacv1.RoleBinding
			o.decode(t, &b)
			r.roleBindings = append(r.roleBindings, b)
		}
	}
	return r
}

func boundTo(subjects []rbacv1.Subject, sa string) bool {
	return slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
		return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == releaseNamespace
	})
}

// grantsOf returns what the ServiceAccount in the release namespace is
// granted through the rendered bindings; a binding to a role that was not
// rendered fails the test.
func (r rendered) grantsOf(t *testing.T, sa string) []grant {
	t.Helper()
	var out []grant
	for _, b := range r.clusterRoleBindings {
		if !boundTo(b.Subjects, sa) {
			continue
		}
		cr, ok := r.clusterRoles[b.RoleRef.Name]
		if b.RoleRef.Kind != "ClusterRole" || !ok {
			t.Fatalf("ClusterRoleBinding %s refers to %s %s, which is not rendered", b.Name, b.RoleRef.Kind, b.RoleRef.Name)
		}
		out = append(out, expand(cr.Rules, "")...)
	}
	for _, b := range r.roleBindings {
		if !boundTo(b.Subjects, sa) {
			continue
		}
		var rules []rbacv1.PolicyRule
		switch b.RoleRef.Kind {
		case "Role":
			role, ok := r.roles[key(b.Namespace, b.RoleRef.Name)]
			if !ok {
				t.Fatalf("RoleBinding %s/%s refers to Role %s, which is not rendered in %s", b.Namespace, b.Name, b.RoleRef.Name, b.Namespace)
			}
			rules = role.Rules
		case "ClusterRole":
			cr, ok := r.clusterRoles[b.RoleRef.Name]
			if !ok {
				t.Fatalf("RoleBinding %s/%s refers to ClusterRole %s, which is not rendered", b.Namespace, b.Name, b.RoleRef.Name)
			}
			rules = cr.Rules
		}
		out = append(out, expand(rules, b.Namespace)...)
	}
	return out
}

// configRBAC reads the ClusterRoles and Roles of a config/rbac file.
func configRBAC(t *testing.T, file string) ([]rbacv1.ClusterRole, []rbacv1.Role) {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, "config/rbac/"+file))
	if err != nil {
		t.Fatal(err)
	}
	var crs []rbacv1.ClusterRole
	var roles []rbacv1.Role
	for _, o := range parse(t, string(data)) {
		switch o.Kind {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			o.decode(t, &cr)
			crs = append(crs, cr)
		case "Role":
			var r rbacv1.Role
			o.decode(t, &r)
			roles = append(roles, r)
		default:
			t.Fatalf("config/rbac/%s: unexpected %s", file, o.Kind)
		}
	}
	return crs, roles
}

// webhookConfigNames are the only webhook configurations the manager
// writes; the chart grants get/update/patch on them by name (list and watch
// cannot be limited by name).
var webhookConfigNames = []string{webhook.ValidatingConfigurationName, webhook.MutatingConfigurationName}

// harnessNamespacesPlaceholder is the namespace of the generated Role that
// the chart renders in each of harnessNamespaces (the manager's RBAC markers
// name it so; config/rbac/role.yaml).
const harnessNamespacesPlaceholder = "harness-namespaces"

// referenceGrants turns config/rbac rules into what the chart must grant:
// cluster-wide rules stay cluster-wide, except Secrets, which move to the
// harness namespaces (none when the list is empty); a Role of the
// placeholder namespace applies in each harness namespace, every other Role
// in the release namespace; webhook configurations are narrowed to their
// names.
func referenceGrants(crs []rbacv1.ClusterRole, roles []rbacv1.Role, harnessNamespaces []string) []grant {
	var out []grant
	for _, cr := range crs {
		for _, g := range expand(cr.Rules, "") {
			if g.group == "admissionregistration.k8s.io" && g.verb != "list" && g.verb != "watch" {
				g.names = webhookConfigNames
			}
			if g.group == "" && g.resource == "secrets" {
				for _, ns := range harnessNamespaces {
					g.namespace = ns
					out = append(out, g)
				}
				continue
			}
			out = append(out, g)
		}
	}
	for _, r := range roles {
		if r.Namespace != harnessNamespacesPlaceholder {
			out = append(out, expand(r.Rules, releaseNamespace)...)
			continue
		}
		for _, ns := range harnessNamespaces {
			out = append(out, expand(r.Rules, ns)...)
		}
	}
	return out
}

// checkExact fails the test unless got allows every want, and every grant in
// got is allowed by want or extra (rules the chart adds on purpose).
func checkExact(t *testing.T, who string, got, want, extra []grant) {
	t.Helper()
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g grant) bool { return covers(g, w) }) {
			t.Errorf("%s is not granted %s", who, w)
		}
	}
	for _, g := range got {
		justified := func(ref grant) bool {
			// A reference granted cluster-wide justifies the same grant in
			// one namespace; names narrow, never widen.
			return ref.group == g.group && ref.resource == g.resource && ref.verb == g.verb &&
				(ref.namespace == "" || ref.namespace == g.namespace) &&
				(len(ref.names) == 0 || covers(ref, g))
		}
		if !slices.ContainsFunc(want, justified) && !slices.ContainsFunc(extra, justified) {
			t.Errorf("%s is granted %s, which config/rbac does not list", who, g)
		}
	}
}

// TestManagerRBAC checks the manager gets exactly config/rbac/role.yaml and
// leader_election_role.yaml (Secrets only per harness namespace), plus
// metrics_auth_role.yaml (what its HTTPS metrics endpoint needs to authorize
// scrapes).
func TestManagerRBAC(t *testing.T) {
	crs, roles := configRBAC(t, "role.yaml")
	_, leader := configRBAC(t, "leader_election_role.yaml")
	metricsAuth, _ := configRBAC(t, "metrics_auth_role.yaml")
	crs = append(crs, metricsAuth...)
	cases := []struct {
		valueSet          string
		harnessNamespaces []string
		certManager       bool
	}{
		{"defaults", nil, false},
		{"harness-namespaces", []string{"team-a", "team-b"}, false},
		{"cert-manager", nil, true},
	}
	for _, c := range cases {
		t.Run(c.valueSet, func(t *testing.T) {
			r := renderRBAC(t, objectsOf(t, c.valueSet))
			var ns []rbacv1.Role
			for _, role := range append(slices.Clone(roles), leader...) {
				// The cert-manager objects are applied only in cert-manager
				// mode, so the chart grants them only then.
				role.Rules = slices.DeleteFunc(slices.Clone(role.Rules), func(rule rbacv1.PolicyRule) bool {
					return !c.certManager && slices.Contains(rule.APIGroups, "cert-manager.io")
				})
				ns = append(ns, role)
			}
			want := referenceGrants(crs, ns, c.harnessNamespaces)
			got := r.grantsOf(t, fullname+"-manager")
			checkExact(t, "the manager", got, want, nil)
		})
	}
}

// secretMounting are the kinds whose objects run Pods (and so can mount any
// Secret of their namespace) or route to them: a right to write one is as
// good as reading the namespace's Secrets.
var secretMounting = []string{"statefulsets", "services", "networkpolicies", "poddisruptionbudgets", "pods",
	"deployments", "daemonsets", "jobs", "cronjobs", "replicasets", "replicationcontrollers"}

// TestManagerWritesWorkloadsOnlyInHarnessNamespaces: no ClusterRole bound to
// the manager lets it create, update, patch or delete a kind that can mount
// a Secret, so it cannot start a Pod that reads another namespace's Secrets;
// it may write them only in the harness namespaces. Control: there, the
// manager's Role grants what its controller writes for a managed harness.
func TestManagerWritesWorkloadsOnlyInHarnessNamespaces(t *testing.T) {
	writes := []string{"create", "update", "patch", "delete", "deletecollection"}
	for _, valueSet := range valueSets {
		c := struct {
			valueSet          string
			harnessNamespaces []string
		}{valueSet, harnessNamespacesOf(valueSet)}
		t.Run(c.valueSet, func(t *testing.T) {
			r := renderRBAC(t, objectsOf(t, c.valueSet))
			for _, b := range r.clusterRoleBindings {
				if !boundTo(b.Subjects, fullname+"-manager") {
					continue
				}
				for _, g := range expand(r.clusterRoles[b.RoleRef.Name].Rules, "") {
					if slices.Contains(secretMounting, g.resource) && slices.Contains(writes, g.verb) {
						t.Errorf("ClusterRole %s (bound by %s) grants the manager %s in every namespace", b.RoleRef.Name, b.Name, g)
					}
				}
			}
			got := r.grantsOf(t, fullname+"-manager")
			for _, g := range got {
				if slices.Contains(secretMounting, g.resource) && slices.Contains(writes, g.verb) &&
					!slices.Contains(c.harnessNamespaces, g.namespace) {
					t.Errorf("the manager is granted %s outside harnessNamespaces %v", g, c.harnessNamespaces)
				}
			}
			for _, ns := range c.harnessNamespaces {
				for _, w := range []struct{ group, resource string }{
					{"apps", "statefulsets"}, {"", "services"}, {"networking.k8s.io", "networkpolicies"}, {"policy", "poddisruptionbudgets"},
				} {
					for _, verb := range []string{"create", "patch", "delete"} {
						want := grant{group: w.group, resource: w.resource, verb: verb, namespace: ns}
						if !slices.ContainsFunc(got, func(g grant) bool { return g.namespace == ns && covers(g, want) }) {
							t.Errorf("the manager is not granted %s by a Role there", want)
						}
					}
				}
			}
		})
	}
}

// TestDispatcherRBAC checks the dispatcher gets exactly
// config/rbac/dispatcher/role.yaml (generated from the markers; Secrets only per harness namespace),
// a leader-election Role and the turn-token Role of
// config/rbac/dispatcher_turn_token_role.yaml in the release namespace and,
// with its self-managed TLS certificate (dispatcher.tls.secretName empty), the
// Role of config/rbac/dispatcher_tls_role.yaml there; with the PostgreSQL
// store, get on its connection-string Secret there, by name.
func TestDispatcherRBAC(t *testing.T) {
	crs, _ := configRBAC(t, "dispatcher/role.yaml")
	_, tlsRoles := configRBAC(t, "dispatcher_tls_role.yaml")
	_, turnTokenRoles := configRBAC(t, "dispatcher_turn_token_role.yaml")
	leaderElection := []grant{
		{group: "coordination.k8s.io", resource: "leases", verb: "get", namespace: releaseNamespace},
		{group: "coordination.k8s.io", resource: "leases", verb: "create", namespace: releaseNamespace},
		{group: "coordination.k8s.io", resource: "leases", verb: "update", namespace: releaseNamespace},
		{group: "", resource: "events", verb: "create", namespace: releaseNamespace},
		{group: "", resource: "events", verb: "patch", namespace: releaseNamespace},
		{group: "events.k8s.io", resource: "events", verb: "create", namespace: releaseNamespace},
		{group: "events.k8s.io", resource: "events", verb: "patch", namespace: releaseNamespace},
	}
	for _, c := range []struct {
		valueSet          string
		harnessNamespaces []string
		selfManagedTLS    bool
		postgresSecret    string // dispatcher.store.postgres.secretName with the PostgreSQL store
	}{
		{"defaults", nil, true, ""},
		{"harness-namespaces", []string{"team-a", "team-b"}, true, ""},
		{"cert-manager", nil, false, ""}, // dispatcher.tls.secretName is set
		{"postgres", nil, true, "harness-db-app"},
	} {
		t.Run(c.valueSet, func(t *testing.T) {
			r := renderRBAC(t, objectsOf(t, c.valueSet))
			roles := slices.Clone(turnTokenRoles)
			if c.selfManagedTLS {
				roles = append(roles, tlsRoles...)
			}
			want := append(referenceGrants(crs, roles, c.harnessNamespaces), leaderElection...)
			if c.postgresSecret != "" {
				want = append(want, grant{resource: "secrets", verb: "get", namespace: releaseNamespace, names: []string{c.postgresSecret}})
			}
			got := r.grantsOf(t, fullname+"-dispatcher")
			checkExact(t, "the dispatcher", got, want, nil)
			for _, g := range got {
				// Outside its own namespace the dispatcher only reads Secrets.
				if g.resource == "secrets" && g.verb != "get" && g.namespace != releaseNamespace {
					t.Errorf("the dispatcher is granted %s outside the release namespace", g)
				}
				if g.resource == "secrets" && slices.Contains([]string{"update", "patch"}, g.verb) &&
					!slices.Equal(g.names, []string{fullname + "-dispatcher-tls"}) {
					t.Errorf("the dispatcher is granted %s, want it limited to %s-dispatcher-tls", g, fullname)
				}
			}
		})
	}
}

// TestUserRoles checks the gateway, gateway-registry and on-call ClusterRoles equal the ones in
// config/rbac.
func TestUserRoles(t *testing.T) {
	r := renderRBAC(t, objectsOf(t, "defaults"))
	for file, name := range map[string]string{"gateway_role.yaml": fullname + "-gateway",
		"gateway_registry_role.yaml": fullname + "-gateway-registry", "oncall_role.yaml": fullname + "-oncall"} {
		crs, _ := configRBAC(t, file)
		if len(crs) != 1 {
			t.Fatalf("config/rbac/%s has %d ClusterRoles, want 1", file, len(crs))
		}
		got, ok := r.clusterRoles[name]
		if !ok {
			t.Errorf("ClusterRole %s is not rendered", name)
			continue
		}
		if !equality.Semantic.DeepEqual(got.Rules, crs[0].Rules) {
			a, _ := yaml.Marshal(got.Rules)
			b, _ := yaml.Marshal(crs[0].Rules)
			t.Errorf("ClusterRole %s differs from config/rbac/%s:\nchart:\n%s\nconfig:\n%s", name, file, a, b)
		}
	}
}

// TestNoWildcards checks no rendered rule of any values set uses "*".
func TestNoWildcards(t *testing.T) {
	for _, valueSet := range valueSets {
		t.Run(valueSet, func(t *testing.T) {
			r := renderRBAC(t, objectsOf(t, valueSet))
			check := func(what string, rules []rbacv1.PolicyRule) {
				for i, rule := range rules {
					for field, vals := range map[string][]string{
						"apiGroups": rule.APIGroups, "resources": rule.Resources, "verbs": rule.Verbs,
						"resourceNames": rule.ResourceNames, "nonResourceURLs": rule.NonResourceURLs,
					} {
						for _, v := range vals {
							if strings.Contains(v, "*") {
								t.Errorf("%s rule %d: %s contains %q", what, i, field, v)
							}
						}
					}
				}
			}
			for name, cr := range r.clusterRoles {
				check("ClusterRole "+name, cr.Rules)
				if cr.AggregationRule != nil {
					t.Errorf("ClusterRole %s aggregates other roles", name)
				}
			}
			for name, role := range r.roles {
				check("Role "+name, role.Rules)
			}
		})
	}
}
