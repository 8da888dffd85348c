package codexconfig_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
)

// toolWrites runs a tool in the real Codex's workspace-write sandbox with
// the given extra options, in a working directory of its own, and says what
// it could write: a directory under /tmp, $TMPDIR, its working directory.
func toolWrites(t *testing.T, extra ...string) string {
	t.Helper()
	home, cwd, tmpdir := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(codexconfig.Offline), 0o600); err != nil {
		t.Fatal(err)
	}
	// Another session's place in the pod's shared /tmp.
	shared, err := os.MkdirTemp("/tmp", "other-session-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(shared) })
	args := append([]string{"sandbox", "-c", `sandbox_mode="workspace-write"`}, extra...)
	args = append(args, "--", "sh", "-c",
		`echo a > "$SHARED/planted" && echo wrote-tmp; echo b > "$TMPDIR/planted" && echo wrote-tmpdir; echo c > own && echo wrote-cwd`)
	cmd := exec.Command(codextest.Bin(t), args...)
	cmd.Dir = cwd
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home, "TMPDIR=" + tmpdir, "SHARED=" + shared}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("codex sandbox: %v\n%s", err, out)
	}
	return string(out)
}

func TestWorkspaceWriteArgsKeepToolsToTheirWorkingDirectory(t *testing.T) {
	// Control: Codex's own defaults let the tool write /tmp and $TMPDIR, so
	// the check below sees a write when there is one.
	if out := toolWrites(t); !strings.Contains(out, "wrote-tmp\n") || !strings.Contains(out, "wrote-tmpdir\n") || !strings.Contains(out, "wrote-cwd\n") {
		t.Fatalf("without the options the tool wrote only:\n%s", out)
	}

	out := toolWrites(t, codexconfig.WorkspaceWriteArgs()...)
	if !strings.Contains(out, "wrote-cwd\n") {
		t.Errorf("the tool could not write its working directory:\n%s", out)
	}
	if strings.Contains(out, "wrote-tmp\n") || strings.Contains(out, "wrote-tmpdir\n") {
		t.Errorf("the tool wrote /tmp or $TMPDIR, which the pod's sessions share:\n%s", out)
	}
	if !strings.Contains(out, "Read-only file system") {
		t.Errorf("the refusal is not the sandbox's read-only mount:\n%s", out)
	}
}
