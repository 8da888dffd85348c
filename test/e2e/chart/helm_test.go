//go:build e2e

// Package chart tests the Helm chart charts/harness-operator with the real
// helm binary (HELM_BIN, built by hack/setup-helm.sh; `make test-e2e` sets it):
// helm lint, golden helm template output, values-schema rejections, and the
// rendered objects against the sources of truth in the Go code and
// config/rbac (webhook configurations, RBAC, pod labels, security contexts,
// command-line flags).
package chart

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current helm template output")

const (
	// releaseName and releaseNamespace are the release every render uses, so
	// the golden files are stable.
	releaseName      = "harness-operator"
	releaseNamespace = "harness-operator-system"
	// fullname is the name prefix the chart derives from releaseName.
	fullname = "harness-operator"
)

// valueSets are the values files under testdata/values, by name; each has a
// golden file testdata/<name>.golden.yaml.
var valueSets = []string{"defaults", "harness-namespaces", "cert-manager", "webhook-url", "opt-ins", "postgres", "model-gateway", "model-gateway-opt-ins"}

// helmBin returns the helm binary, failing the test when HELM_BIN is unset:
// the chart tests must run, not skip, under make test-e2e.
func helmBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("HELM_BIN")
	if bin == "" {
		t.Fatal("HELM_BIN is not set: run `make test-e2e` (or HELM_BIN=$(hack/setup-helm.sh) go test -tags e2e ./test/e2e/chart/...)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("HELM_BIN=%s: %v", bin, err)
	}
	return bin
}

// repoPath returns a path relative to the repository root.
func repoPath(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func chartDir(t *testing.T) string { return repoPath(t, "charts/harness-operator") }

// helm runs the helm binary and returns stdout, stderr and the error.
func helm(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	// An empty HOME-independent environment: no repositories, plugins or
	// kubeconfig of the developer leak into the render.
	tmp := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(tmp, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(tmp, "config"),
		"HELM_DATA_HOME="+filepath.Join(tmp, "data"),
		"KUBECONFIG="+filepath.Join(tmp, "no-kubeconfig"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// valuesFile returns the path of testdata/values/<name>.yaml.
func valuesFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "values", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeValues writes values YAML into a temporary file and returns its path.
func writeValues(t *testing.T, values string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// template renders the chart with the values files and returns the output.
func template(t *testing.T, valuesFiles ...string) string {
	t.Helper()
	args := []string{"template", releaseName, chartDir(t), "--namespace", releaseNamespace}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	out, stderr, err := helm(t, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// object is one rendered manifest: its kind, namespace and name, and its YAML.
type object struct {
	Kind, Namespace, Name string
	raw                   []byte
}

// decode unmarshals the object into a typed value.
func (o object) decode(t *testing.T, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(o.raw, into); err != nil {
		t.Fatalf("decode %s %s/%s: %v", o.Kind, o.Namespace, o.Name, err)
	}
}

// objects renders the chart and splits the output into objects.
func objects(t *testing.T, valuesFiles ...string) []object {
	t.Helper()
	return parse(t, template(t, valuesFiles...))
}

// objectsOf renders one of valueSets.
func objectsOf(t *testing.T, valueSet string) []object {
	t.Helper()
	return objects(t, valuesFile(t, valueSet))
}

func parse(t *testing.T, rendered string) []object {
	t.Helper()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(rendered)))
	var out []object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("split rendered YAML: %v", err)
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("parse rendered document: %v\n%s", err, doc)
		}
		if meta.Kind == "" {
			continue // a document of comments only
		}
		out = append(out, object{Kind: meta.Kind, Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name, raw: doc})
	}
	return out
}

// find returns the object of the kind and name, failing the test if it is
// missing.
func find(t *testing.T, objs []object, kind, namespace, name string) object {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Namespace == namespace && o.Name == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered; rendered: %s", kind, key(namespace, name), inventory(objs))
	return object{}
}

// has reports whether an object of the kind and name was rendered.
func has(objs []object, kind, namespace, name string) bool {
	for _, o := range objs {
		if o.Kind == kind && o.Namespace == namespace && o.Name == name {
			return true
		}
	}
	return false
}

func key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func inventory(objs []object) string {
	var names []string
	for _, o := range objs {
		names = append(names, fmt.Sprintf("%s %s", o.Kind, key(o.Namespace, o.Name)))
	}
	return strings.Join(names, ", ")
}
