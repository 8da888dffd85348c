package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current output")

// binary is the kubectl-harness built once for these tests: they run the real
// binary, as a user or kubectl would.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "kubectl-harness-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "kubectl-harness")
	if err := testutil.BuildBinaries(dir, "./cmd/kubectl-harness"); err != nil {
		fmt.Fprintf(os.Stderr, "build kubectl-harness: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

const (
	samples  = "../../config/samples"
	testdata = "testdata/manifests"
	attempts = "testdata/attempts"
)

func TestExplainGolden(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantExit int
	}{
		{
			name:     "samples-openai-selects-codex",
			args:     []string{"explain", "--offline", "-f", samples, "--attempt", attempts + "/openai-demo.json"},
			wantExit: 0,
		},
		{
			name:     "samples-openai-selects-codex-json",
			args:     []string{"explain", "--offline", "-f", samples, "--attempt", attempts + "/openai-demo.json", "-o", "json"},
			wantExit: 0,
		},
		{
			name:     "samples-openai-selects-codex-yaml-from-stdin",
			args:     []string{"explain", "--offline", "-f", samples, "--attempt", "-", "-o", "yaml"},
			stdin:    `{"agentId":"main","sessionId":"3f6d2a9e-5b1c-4e8a-9d07-2c41b8e6f5a0","provider":"openai","modelId":"gpt-5.5"}`,
			wantExit: 0,
		},
		{
			name: "override-to-openclaw-under-deny-fails-closed",
			args: []string{"explain", "--offline", "-f", samples, "-f", testdata + "/session-override-openclaw.yaml",
				"--attempt", attempts + "/openai-wants-openclaw.json"},
			wantExit: 3,
		},
		{
			name:     "restricted-turn-on-codex-without-exact-fails-closed",
			args:     []string{"explain", "--offline", "-f", samples, "--attempt", attempts + "/openai-restricted.json"},
			wantExit: 3,
		},
		{
			name:     "authored-overrides-use-the-declared-lossless-fallback",
			args:     []string{"explain", "--offline", "-f", samples, "--attempt", attempts + "/openai-custom-route.json"},
			wantExit: 0,
		},
		{
			name:     "attempt-contradicting-its-session-is-bad-input",
			args:     []string{"explain", "--offline", "-f", samples, "--attempt", attempts + "/openai-demo-other-model.json"},
			wantExit: 2,
		},
		{
			name: "cli-backend-alias-passes-through-to-openclaw",
			args: []string{"explain", "--offline", "-f", testdata + "/harness-only.yaml", "-f", testdata + "/claude-cli-policy.yaml",
				"-n", "agents", "--attempt", attempts + "/anthropic-whatif.json"},
			wantExit: 0,
		},
		{
			name: "openai-official-route-without-policy-is-implicit-codex",
			args: []string{"explain", "--offline", "-f", testdata + "/harness-only.yaml", "-n", "agents", "--attempt", "-"},
			stdin: `{"agentId":"main","provider":"openai","modelId":"gpt-5.5","modelProvider":{"api":"openai-responses",` +
				`"baseUrl":"https://api.openai.com/v1","requestTransportOverrides":"none","runtimePolicy":{"compatibleIds":["codex"]}}}`,
			wantExit: 0,
		},
		{
			// The harness SDK: "The openai/* prefix alone never selects Codex."
			name:     "openai-without-route-facts-is-openclaw",
			args:     []string{"explain", "--offline", "-f", testdata + "/harness-only.yaml", "-n", "agents", "--attempt", "-"},
			stdin:    `{"agentId":"main","provider":"openai","modelId":"gpt-5.5"}`,
			wantExit: 0,
		},
		{
			name:     "what-if-explicit-unregistered-harness-fails-closed",
			args:     []string{"explain", "--offline", "-f", testdata + "/harness-only.yaml", "-n", "agents", "--attempt", "-"},
			stdin:    `{"agentId":"main","provider":"openai","modelId":"gpt-5.5","agentHarnessRuntimeOverride":"claude-agent"}`,
			wantExit: 3,
		},
		{
			name:     "locked-pin-without-route-facts-is-used-unchecked",
			args:     []string{"explain", "--offline", "-f", testdata + "/harness-only.yaml", "-f", testdata + "/sessions-pinned.yaml", "--attempt", "-"},
			stdin:    `{"agentId":"main","sessionId":"locked-1"}`,
			wantExit: 0,
		},
		{
			name: "locked-pin-is-checked-against-route-facts",
			args: []string{"explain", "--offline", "-f", testdata + "/harness-only.yaml", "-f", testdata + "/sessions-pinned.yaml", "--attempt", "-"},
			stdin: `{"agentId":"main","sessionId":"locked-1","modelProvider":{"api":"openai-responses",` +
				`"baseUrl":"https://proxy.example/v1","requestTransportOverrides":"none","runtimePolicy":{"compatibleIds":["openclaw"]}}}`,
			wantExit: 3,
		},
		{
			name:     "unlocked-pin-takes-no-part",
			args:     []string{"explain", "--offline", "-f", testdata + "/harness-only.yaml", "-f", testdata + "/sessions-pinned.yaml", "--attempt", "-"},
			stdin:    `{"agentId":"main","sessionId":"unlocked-1"}`,
			wantExit: 0,
		},
		{
			name:     "unknown-attempt-field-is-named",
			args:     []string{"explain", "--offline", "-f", samples, "--attempt", attempts + "/unknown-field.json"},
			wantExit: 2,
		},
		{
			name:     "manifest-typo-is-named",
			args:     []string{"explain", "--offline", "-f", testdata + "/typo.yaml", "--attempt", attempts + "/openai-demo.json"},
			wantExit: 2,
		},
		{
			name:     "offline-needs-manifests",
			args:     []string{"explain", "--offline", "--attempt", attempts + "/openai-demo.json"},
			wantExit: 2,
		},
		{
			name:     "import-openclaw-config",
			args:     []string{"import", "openclaw-config", "testdata/openclaw/codex-only.json5", "--name", "codex-only", "--session-overrides", "Deny"},
			wantExit: 0,
		},
		{
			name:     "import-openclaw-config-without-runtime-settings",
			args:     []string{"import", "openclaw-config", "testdata/openclaw/no-runtime.json5"},
			wantExit: 2,
		},
		{
			name:     "import-openclaw-config-malformed",
			args:     []string{"import", "openclaw-config", "testdata/openclaw/broken.json5"},
			wantExit: 2,
		},
		{
			name:     "import-openclaw-config-bad-overrides",
			args:     []string{"import", "openclaw-config", "testdata/openclaw/codex-only.json5", "--session-overrides", "deny"},
			wantExit: 2,
		},
		{
			name:     "bad-output-format",
			args:     []string{"explain", "--offline", "-f", samples, "--attempt", attempts + "/openai-demo.json", "-o", "xml"},
			wantExit: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, tt.args...)
			cmd.Stdin = strings.NewReader(tt.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			exit := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				exit = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			got := fmt.Sprintf("exit: %d\n--- stdout\n%s--- stderr\n%s", exit, stdout.String(), stderr.String())
			golden := filepath.Join("testdata", "golden", tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read golden (run with -update to create): %v", err)
			}
			if exit != tt.wantExit {
				t.Errorf("exit code %d, want %d", exit, tt.wantExit)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run `go test ./cmd/kubectl-harness -update` after checking the change)\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}
