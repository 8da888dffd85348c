package codex

import (
	"errors"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/adapter"
	"github.com/openclaw/harness-operator/internal/codextest"
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
