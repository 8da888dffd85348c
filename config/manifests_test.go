// Package config_test checks that the committed generated files — CRDs, RBAC
// and deepcopy code — are exactly what `make generate manifests` produces from
// the markers, so a marker change cannot ship without its manifests.
package config_test

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

func TestGeneratedFilesAreUpToDate(t *testing.T) {
	out := t.TempDir()
	crdDir, rbacDir, objectDir := filepath.Join(out, "crd"), filepath.Join(out, "rbac"), filepath.Join(out, "object")
	runControllerGen(t, "crd", "rbac:roleName=harness-operator-manager",
		"paths=./api/...", "paths=./controllers/...", "paths=./internal/manager/webhook/...",
		"output:crd:artifacts:config="+crdDir, "output:rbac:artifacts:config="+rbacDir)
	runControllerGen(t, "object", "paths=./api/...", "output:object:dir="+objectDir)
	dispatcherDir := filepath.Join(out, "dispatcher")
	runControllerGen(t, "rbac:roleName=harness-operator-dispatcher", "paths=./internal/dispatcher/...",
		"output:rbac:artifacts:config="+dispatcherDir)

	compareDir(t, crdDir, "crd/bases")
	// The other config/rbac files (not the manager's and the dispatcher's
	// ClusterRoles) are written by hand: TestHandWrittenRBAC
	// and the chart tests (test/e2e/chart/rbac_test.go) check them.
	compareDir(t, rbacDir, "rbac", "role.yaml")
	compareDir(t, dispatcherDir, "rbac/dispatcher", "role.yaml")
	compareDir(t, objectDir, "../api/v1alpha1", "zz_generated.deepcopy.go")
}

func runControllerGen(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "controller-gen"}, args...)...)
	cmd.Dir = ".." // the module root, where the markers' paths are relative to
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen %v: %v\n%s", args, err, output)
	}
}

// compareDir asserts that every generated file in generated equals the
// committed file of the same name in committed (relative to this directory),
// and, when only is empty, that committed holds no stale extra files.
func compareDir(t *testing.T, generated, committed string, only ...string) {
	t.Helper()
	names := only
	if len(names) == 0 {
		entries, err := os.ReadDir(generated)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		committedEntries, err := os.ReadDir(committed)
		if err != nil {
			t.Fatal(err)
		}
		if len(committedEntries) != len(entries) {
			t.Errorf("%s has %d files, controller-gen produces %d: run `make manifests`", committed, len(committedEntries), len(entries))
		}
	}
	for _, name := range names {
		want, err := os.ReadFile(filepath.Join(generated, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Errorf("%s: %v (run `make generate manifests`)", filepath.Join(committed, name), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what controller-gen produces: run `make generate manifests` and commit the result", filepath.Join(committed, name))
		}
	}
}

// secretRoles are the dispatcher's Roles for the Secrets it keeps: each verb
// but those Kubernetes cannot limit by name (create; the TLS rotator's cache
// lists and watches) applies only to the Role's own Secret.
var secretRoles = map[string]struct {
	secret  string
	unnamed []string
}{
	"dispatcher_tls_role.yaml":        {secret: "harness-operator-dispatcher-tls", unnamed: []string{"create", "list", "watch"}},
	"dispatcher_turn_token_role.yaml": {secret: "harness-dispatcher-turn-token", unnamed: []string{"create"}},
}

// TestHandWrittenRBAC checks the hand-written RBAC files decode strictly (a
// misspelt key such as resourceName would silently widen a rule), use no
// wildcard, and that the dispatcher's Secret Roles (TLS, turn-token key)
// reach only their own Secret.
func TestHandWrittenRBAC(t *testing.T) {
	files, err := filepath.Glob("rbac/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A check of no file passes whatever the files say: the glob must find
	// the hand-written Roles, the dispatcher's Secret Roles among them.
	checked := map[string]bool{}
	for _, file := range files {
		if filepath.Base(file) == "role.yaml" { // generated: TestGeneratedFilesAreUpToDate
			continue
		}
		checked[filepath.Base(file)] = true
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(data, &meta); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var rules []rbacv1.PolicyRule
		switch meta.Kind {
		case "ClusterRole":
			var cr rbacv1.ClusterRole
			err = yaml.UnmarshalStrict(data, &cr)
			rules = cr.Rules
		case "Role":
			var r rbacv1.Role
			err = yaml.UnmarshalStrict(data, &r)
			rules = r.Rules
		default:
			t.Errorf("%s: kind %q, want one ClusterRole or Role", file, meta.Kind)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if len(rules) == 0 {
			t.Errorf("%s has no rules", file)
		}
		for i, r := range rules {
			for _, v := range slices.Concat(r.APIGroups, r.Resources, r.Verbs, r.ResourceNames) {
				if strings.Contains(v, "*") {
					t.Errorf("%s rule %d uses %q", file, i, v)
				}
			}
			if sr, ok := secretRoles[filepath.Base(file)]; ok && slices.ContainsFunc(r.Verbs, func(v string) bool {
				return !slices.Contains(sr.unnamed, v)
			}) && !slices.Equal(r.ResourceNames, []string{sr.secret}) {
				t.Errorf("%s rule %d (%v) is not limited to the Secret %s", file, i, r.Verbs, sr.secret)
			}
		}
	}
	if len(checked) == 0 {
		t.Fatalf("no hand-written RBAC file matches rbac/*.yaml (in %s)", mustGetwd(t))
	}
	for file := range secretRoles {
		if !checked[file] {
			t.Errorf("rbac/%s was not checked; checked %v", file, slices.Sorted(maps.Keys(checked)))
		}
	}
}

// TestManagerWritesWorkloadsOnlyThroughHarnessNamespaceRoles: the markers
// give the manager's generated ClusterRole no write on a kind that runs Pods
// (a Pod mounts any Secret of its namespace) and no rule on Secrets; those
// writes are in the Role of the placeholder namespace "harness-namespaces",
// which the chart renders in each harness namespace (control: that Role
// holds what the AgentHarness controller writes).
func TestManagerWritesWorkloadsOnlyThroughHarnessNamespaceRoles(t *testing.T) {
	data, err := os.ReadFile("rbac/role.yaml")
	if err != nil {
		t.Fatal(err)
	}
	secretMounting := []string{"statefulsets", "services", "networkpolicies", "poddisruptionbudgets", "pods",
		"deployments", "daemonsets", "jobs", "cronjobs", "replicasets", "replicationcontrollers", "secrets"}
	writes := []string{"create", "update", "patch", "delete", "deletecollection"}
	var clusterRoles int
	var harnessRole *rbacv1.Role
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var meta struct {
			Kind     string
			Metadata struct{ Namespace string }
		}
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("rbac/role.yaml: %v", err)
		}
		switch {
		case meta.Kind == "ClusterRole":
			clusterRoles++
			var cr rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict([]byte(doc), &cr); err != nil {
				t.Fatalf("rbac/role.yaml: %v", err)
			}
			for _, r := range cr.Rules {
				for _, res := range r.Resources {
					if res == "secrets" {
						t.Errorf("ClusterRole %s has a rule on secrets: %v", cr.Name, r.Verbs)
					}
					for _, v := range r.Verbs {
						if slices.Contains(secretMounting, res) && slices.Contains(writes, v) {
							t.Errorf("ClusterRole %s grants %s on %s in every namespace", cr.Name, v, res)
						}
					}
				}
			}
		case meta.Kind == "Role" && meta.Metadata.Namespace == "harness-namespaces":
			harnessRole = &rbacv1.Role{}
			if err := yaml.UnmarshalStrict([]byte(doc), harnessRole); err != nil {
				t.Fatalf("rbac/role.yaml: %v", err)
			}
		}
	}
	if clusterRoles != 1 {
		t.Fatalf("rbac/role.yaml has %d ClusterRoles, want the manager's one", clusterRoles)
	}
	if harnessRole == nil {
		t.Fatal("rbac/role.yaml has no Role in the placeholder namespace harness-namespaces")
	}
	for _, res := range []string{"statefulsets", "services", "networkpolicies", "poddisruptionbudgets", "secrets"} {
		for _, v := range []string{"create", "patch", "delete"} {
			if !slices.ContainsFunc(harnessRole.Rules, func(r rbacv1.PolicyRule) bool {
				return slices.Contains(r.Resources, res) && slices.Contains(r.Verbs, v)
			}) {
				t.Errorf("the harness namespaces' Role does not grant %s on %s", v, res)
			}
		}
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
