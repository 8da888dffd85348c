//go:build e2e

package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The release workflow (.github/workflows/release.yaml) cannot run here; what
// it does to the chart can: hack/release/pin-chart.sh writes the version, the
// repository and the pushed digests into a copy, and the copy must render the
// manager and the dispatcher pinned by digest.

const (
	managerDigest    = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	dispatcherDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// pinChart copies the chart and runs pin-chart.sh on the copy with the given
// images.env content; it returns the copy and the script's combined output.
func pinChart(t *testing.T, imagesEnv string) (string, string, error) {
	t.Helper()
	dir := t.TempDir()
	chart := filepath.Join(dir, "harness-operator")
	if out, err := exec.Command("cp", "-r", chartDir(t), chart).CombinedOutput(); err != nil {
		t.Fatalf("copy the chart: %v\n%s", err, out)
	}
	env := filepath.Join(dir, "images.env")
	if err := os.WriteFile(env, []byte(imagesEnv), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(repoPath(t, "hack/release/pin-chart.sh"), chart, "1.2.3", "registry.example/org/harness-operator", env)
	out, err := cmd.CombinedOutput()
	return chart, string(out), err
}

func TestReleasePinsTheChartToTheImageDigests(t *testing.T) {
	chart, out, err := pinChart(t, "MANAGER_IMAGE=x\nMANAGER_DIGEST="+managerDigest+"\nDISPATCHER_DIGEST="+dispatcherDigest+"\n")
	if err != nil {
		t.Fatalf("pin-chart.sh: %v\n%s", err, out)
	}
	rendered, stderr, err := helm(t, "template", releaseName, chart, "--namespace", releaseNamespace)
	if err != nil {
		t.Fatalf("helm template of the pinned chart: %v\n%s", err, stderr)
	}
	objs := parse(t, rendered)
	for name, want := range map[string]string{
		"harness-operator-manager":    "registry.example/org/harness-operator/manager@" + managerDigest,
		"harness-operator-dispatcher": "registry.example/org/harness-operator/dispatcher@" + dispatcherDigest,
	} {
		if got := deployment(t, objs, name).Spec.Template.Spec.Containers[0].Image; got != want {
			t.Errorf("%s runs %s, want %s", name, got, want)
		}
	}
	meta, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nversion: 1.2.3\n", "\nappVersion: \"1.2.3\"\n"} {
		if !strings.Contains(string(meta), want) {
			t.Errorf("Chart.yaml lacks %q:\n%s", strings.TrimSpace(want), meta)
		}
	}
}

func TestReleaseRefusesToShipAnUnpinnedChart(t *testing.T) {
	_, out, err := pinChart(t, "MANAGER_DIGEST="+managerDigest+"\nDISPATCHER_DIGEST=latest\n")
	if err == nil {
		t.Fatalf("pin-chart.sh accepted a dispatcher without a digest:\n%s", out)
	}
	if !strings.Contains(out, "has no DISPATCHER_DIGEST=sha256:<64 hex digits>") {
		t.Errorf("the refusal does not name the missing digest:\n%s", out)
	}
}
