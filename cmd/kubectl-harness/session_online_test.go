package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// startCluster starts envtest and writes a kubeconfig of an admin user (a
// client certificate: no bearer token). Each online test starts its own, so
// they share nothing and run in parallel: much of a test's time is waiting
// for its API server to come up.
func startCluster(t *testing.T) (*testutil.Env, string) {
	t.Helper()
	te, err := testutil.StartEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = te.Stop() })
	user, err := te.AddUser(envtest.User{Name: "cli-admin", Groups: []string{"system:masters"}})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return te, path
}

// runCLI runs the built binary with extra environment variables.
func runCLI(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	exit := 0
	var ee *exec.ExitError
	if err := cmd.Run(); errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), exit
}

// TestSessionCreateAndStatus runs `session create` and `status` against a
// real kube-apiserver through a kubeconfig.
func TestSessionCreateAndStatus(t *testing.T) {
	t.Parallel() // a control plane of its own (startCluster)
	te, kubeconfig := startCluster(t)
	c := te.Client
	ctx := t.Context()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cli"}}); err != nil {
		t.Fatal(err)
	}
	kc := "--kubeconfig=" + kubeconfig

	out, errOut, exit := runCLI(t, nil, "session", "create", kc, "-n", "cli", "--model", "openai/gpt-5.5",
		"--key", "agent:main:main", "--session-id", "Agent:Main.S1")
	if exit != exitOK || out != "agent-main-s1\n" {
		t.Fatalf("create: exit %d, stdout %q, stderr %s", exit, out, errOut)
	}
	var s v1alpha1.AgentSession
	if err := c.Get(ctx, client.ObjectKey{Namespace: "cli", Name: "agent-main-s1"}, &s); err != nil {
		t.Fatal(err)
	}
	if s.Spec.AgentID != "main" || s.Spec.SessionKey != "agent:main:main" || s.Spec.SessionID != "Agent:Main.S1" || s.Spec.Model != "openai/gpt-5.5" {
		t.Fatalf("spec %+v", s.Spec)
	}

	// Without --session-id: a random UUID, and the name is that id.
	out, errOut, exit = runCLI(t, nil, "session", "create", kc, "-n", "cli", "--model", "openai/gpt-5.5", "--key", "agent:main:other", "--agent", "ops")
	name := strings.TrimSpace(out)
	if exit != exitOK || len(name) != 36 {
		t.Fatalf("create with a generated id: exit %d, stdout %q, stderr %s", exit, out, errOut)
	}
	var gen v1alpha1.AgentSession
	if err := c.Get(ctx, client.ObjectKey{Namespace: "cli", Name: name}, &gen); err != nil || gen.Spec.SessionID != name || gen.Spec.AgentID != "ops" {
		t.Fatalf("generated session %+v: %v", gen.Spec, err)
	}

	for _, bad := range [][]string{
		{"--model", "openai/gpt-5.5", "--key", "agent:main:main", "--session-id", "Agent:Main.S1"}, // exists
		{"--model", "gpt-5.5", "--key", "k"},                                  // not provider/model
		{"--model", "Openai/gpt-5.5", "--key", "k"},                           // refused by the CRD's validation
		{"--model", "openai/gpt-5.5", "--key", " k", "--session-id", "s-bad"}, // surrounding space
		{"--key", "k"},
	} {
		out, errOut, exit := runCLI(t, nil, append([]string{"session", "create", kc, "-n", "cli"}, bad...)...)
		if exit != exitBadInput || out != "" || !strings.HasPrefix(errOut, "error: ") {
			t.Fatalf("create %v: exit %d, stdout %q, stderr %q; want exit 2", bad, exit, out, errOut)
		}
	}

	// The status the manager and the dispatcher write.
	at := metav1.NewTime(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	s.Status = v1alpha1.AgentSessionStatus{
		Policy:         &v1alpha1.SessionPolicy{Runtime: "codex", Source: v1alpha1.PolicySourceProvider, MatchedPolicies: []string{"codex-for-openai"}},
		AgentHarnessID: "codex",
		LastSelection: &v1alpha1.LastSelection{Runtime: "codex", Reason: "forced_plugin", RuntimeSource: v1alpha1.RuntimeSourceProvider, RunID: "run-7",
			Candidates: []v1alpha1.SelectionCandidate{
				{HarnessID: "codex", Result: v1alpha1.SupportResultSupported, Priority: 10},
				{HarnessID: "other", Result: v1alpha1.SupportResultUnsupported, Reason: "provider anthropic only"},
			}},
		NativeBinding: &v1alpha1.NativeBinding{ThreadID: "thread-abc", Pod: "external", Generation: 0},
		LastTurn:      &v1alpha1.LastTurn{RunID: "run-7", Outcome: v1alpha1.TurnSucceeded, StartedAt: at, FinishedAt: metav1.NewTime(at.Add(2 * time.Second))},
		Counters:      &v1alpha1.SessionCounters{Turns: 3, FailedTurns: 1, InputTokens: 120, CachedInputTokens: 20, OutputTokens: 45},
	}
	if err := c.Status().Update(ctx, &s); err != nil {
		t.Fatal(err)
	}

	out, errOut, exit = runCLI(t, nil, "status", "agent-main-s1", kc, "-n", "cli")
	if exit != exitOK {
		t.Fatalf("status: exit %d, stderr %s", exit, errOut)
	}
	for _, want := range []string{
		"Session:", "cli/agent-main-s1",
		"Policy runtime:", "codex (source provider)",
		"Pinned harness:", "Last selection:", "runtime codex, reason forced_plugin, runtime source provider, run run-7",
		"codex Supported (priority 10)", "other Unsupported (priority 0): provider anthropic only",
		"Thread:", "thread-abc on pod external",
		"Last turn:", "run-7 Succeeded (2026-05-01T10:00:02Z, 2s)",
		"3 turns, 1 failed; tokens 120 in (20 cached), 45 out",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("status text lacks %q:\n%s", want, out)
		}
	}

	out, errOut, exit = runCLI(t, nil, "status", "agent-main-s1", kc, "-n", "cli", "-o", "json")
	var v statusView
	if exit != exitOK || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("status -o json: exit %d, stdout %s, stderr %s", exit, out, errOut)
	}
	if v.Policy.Runtime != "codex" || v.AgentHarnessID != "codex" || v.NativeBinding.ThreadID != "thread-abc" || len(v.LastSelection.Candidates) != 2 ||
		v.LastTurn.Outcome != v1alpha1.TurnSucceeded || v.Counters.Turns != 3 || v.SessionID != "Agent:Main.S1" {
		t.Fatalf("status json %+v", v)
	}
	out, _, exit = runCLI(t, nil, "status", "agent-main-s1", kc, "-n", "cli", "-o", "yaml")
	var y statusView
	if exit != exitOK || yaml.Unmarshal([]byte(out), &y) != nil || y.LastSelection.Reason != "forced_plugin" {
		t.Fatalf("status -o yaml: exit %d\n%s", exit, out)
	}

	// A session without status yet, an unknown session, a bad format.
	out, _, exit = runCLI(t, nil, "status", name, kc, "-n", "cli")
	if exit != exitOK || !strings.Contains(out, "<not reported yet>") || !strings.Contains(out, "Thread:") {
		t.Fatalf("status of a fresh session: exit %d\n%s", exit, out)
	}
	_, errOut, exit = runCLI(t, nil, "status", "nope", kc, "-n", "cli")
	if exit != exitBadInput || !strings.Contains(errOut, "AgentSession cli/nope not found") {
		t.Fatalf("unknown session: exit %d, stderr %q", exit, errOut)
	}
	if _, _, exit = runCLI(t, nil, "status", "agent-main-s1", kc, "-n", "cli", "-o", "wide"); exit != exitBadInput {
		t.Fatalf("-o wide: exit %d", exit)
	}
	// turn on an unknown session fails before the dispatcher is looked for.
	_, errOut, exit = runCLI(t, []string{envDispatcherURL + "="}, "turn", "nope", kc, "-n", "cli", "--prompt", "hi")
	if exit != exitBadInput || !strings.Contains(errOut, "AgentSession cli/nope not found") {
		t.Fatalf("turn on an unknown session: exit %d, stderr %q", exit, errOut)
	}
	_, errOut, exit = runCLI(t, []string{envDispatcherURL + "="}, "turn", "agent-main-s1", kc, "-n", "cli", "--prompt", "hi")
	if exit != exitBadInput || !strings.Contains(errOut, envDispatcherURL) {
		t.Fatalf("turn without a dispatcher: exit %d, stderr %q", exit, errOut)
	}
}
