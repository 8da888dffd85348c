//go:build e2e

package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

// TestLint runs helm lint --strict on the chart with every values set.
func TestLint(t *testing.T) {
	for _, name := range valueSets {
		t.Run(name, func(t *testing.T) {
			out, stderr, err := helm(t, "lint", "--strict", chartDir(t), "--namespace", releaseNamespace, "--values", valuesFile(t, name))
			if err != nil {
				t.Fatalf("helm lint --strict failed: %v\n%s%s", err, out, stderr)
			}
			for _, bad := range []string{"[WARNING]", "[ERROR]"} {
				if strings.Contains(out, bad) {
					t.Errorf("helm lint reported %s:\n%s", bad, out)
				}
			}
		})
	}
}

// TestCRDsMatchConfig checks the chart's crds/ are the generated CRDs of
// config/crd/bases (make manifests copies them).
func TestCRDsMatchConfig(t *testing.T) {
	want, err := filepath.Glob(filepath.Join(repoPath(t, "config/crd/bases"), "*.yaml"))
	if err != nil || len(want) == 0 {
		t.Fatalf("no CRDs in config/crd/bases (%v)", err)
	}
	got, err := filepath.Glob(filepath.Join(chartDir(t), "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("charts/harness-operator/crds has %d files, config/crd/bases %d: run make manifests", len(got), len(want))
	}
	for _, src := range want {
		a, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(chartDir(t), "crds", filepath.Base(src)))
		if err != nil {
			t.Errorf("%s is not in the chart: run make manifests (%v)", filepath.Base(src), err)
			continue
		}
		if string(a) != string(b) {
			t.Errorf("charts/harness-operator/crds/%s differs from config/crd/bases: run make manifests", filepath.Base(src))
		}
	}
}

// TestObjectsDecodeStrictly decodes every rendered object into its client-go
// type, refusing unknown or mistyped fields (a typo helm itself renders
// silently). The ServiceMonitor is the only kind outside client-go.
func TestObjectsDecodeStrictly(t *testing.T) {
	for _, valueSet := range valueSets {
		t.Run(valueSet, func(t *testing.T) {
			for _, o := range objectsOf(t, valueSet) {
				var tm metav1.TypeMeta
				if err := yaml.Unmarshal(o.raw, &tm); err != nil {
					t.Fatal(err)
				}
				gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
				if gvk == (schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}) {
					continue
				}
				obj, err := clientgoscheme.Scheme.New(gvk)
				if err != nil {
					t.Errorf("%s %s: not a client-go kind: %v", gvk, o.Name, err)
					continue
				}
				o.decode(t, obj)
			}
		})
	}
}
