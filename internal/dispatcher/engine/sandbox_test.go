package engine

import (
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// Threads on the pods of a harness that asks for Codex's sandbox run in it;
// every other pod thread gets the engine's pod sandbox.
func TestPodSandbox(t *testing.T) {
	e := &Engine{opts: Options{}.withDefaults()}
	for _, tc := range []struct {
		name    string
		sandbox *v1alpha1.AppServerSandbox
		want    string
	}{
		{"no sandbox asked for", nil, DefaultPodSandbox},
		{"Off", &v1alpha1.AppServerSandbox{Mode: v1alpha1.SandboxModeOff}, DefaultPodSandbox},
		{"WorkspaceWrite", &v1alpha1.AppServerSandbox{Mode: v1alpha1.SandboxModeWorkspaceWrite}, "workspace-write"},
	} {
		h := &v1alpha1.AgentHarness{Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{Sandbox: tc.sandbox}}}
		if got := e.podSandbox(h); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
