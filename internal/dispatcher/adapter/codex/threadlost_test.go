package codex

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
)

// TestResumeOfUnknownThread: a thread the app-server does not have (another
// server's, or its home was replaced) is ErrThreadNotFound, before anything
// reaches the model.
func TestResumeOfUnknownThread(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
	in := r.input("LOST1")
	in.ThreadID = "0199a213-81c0-7800-8aa1-bbab2a035a53"
	_, err := Start(testCtx(t, 30*time.Second), r.c, in, adapter.Hooks{})
	if !errors.Is(err, ErrThreadNotFound) {
		t.Fatalf("resume of an unknown thread: %v, want ErrThreadNotFound", err)
	}
	if n := len(r.stub.RequestsContaining("LOST1")); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}

// TestResumeOfTruncatedRollout: a thread whose rollout file the app-server
// can no longer read (cut short: a crash while writing it, a full disk) is
// as lost as a missing one — ErrThreadNotFound, which the engine reports as
// NativeThreadLost — not a retryable failure that can never succeed; and
// nothing reaches the model.
func TestResumeOfTruncatedRollout(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{Transport: codextest.WebSocket})
	in := r.input("TRUNC1 first turn")
	ctx := testCtx(t, 60*time.Second)
	turn, err := Start(ctx, r.c, in, adapter.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := turn.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	threadID := turn.ThreadID()
	if err := r.srv.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	rollouts, err := filepath.Glob(filepath.Join(r.srv.Home, "sessions", "*", "*", "*", "*"+threadID+"*.jsonl"))
	if err != nil || len(rollouts) != 1 {
		t.Fatalf("the thread's rollout under %s: %v %v", r.srv.Home, rollouts, err)
	}
	raw, err := os.ReadFile(rollouts[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rollouts[0], raw[:len(raw)/3], 0o600); err != nil {
		t.Fatal(err)
	}

	restarted := codextest.Start(t, codextest.Options{Transport: codextest.WebSocket, Dir: r.srv.Dir, ProviderURL: r.stub.BaseURL()})
	r.srv = restarted
	c := r.connect(t)
	in = r.input("TRUNC2 second turn")
	in.ThreadID = threadID
	_, err = Start(testCtx(t, 30*time.Second), c, in, adapter.Hooks{})
	if !errors.Is(err, ErrThreadNotFound) {
		t.Fatalf("resume of a thread with a truncated rollout: %v, want ErrThreadNotFound", err)
	}
	if n := len(r.stub.RequestsContaining("TRUNC2")); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}
