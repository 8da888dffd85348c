package codex

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A deleted session leaves nothing on the app-server: its threads are
// archived and its working directory is gone, as the app-server's own API
// reports them.
func TestForgetSessionArchivesItsThreadsAndRemovesItsDirectory(t *testing.T) {
	r := newRig(t, codextest.Options{})
	ctx := testCtx(t, 60*time.Second)
	r.stub.When("forget me", stubmodel.Text("noted"))
	in := r.input("forget me")
	other := r.input("forget me")
	other.Cwd = filepath.Join(filepath.Dir(in.Cwd), "session-2")
	res := run(t, r, in, &recorder{})
	kept := run(t, r, other, &recorder{})
	// A second session's thread in the same directory on another provider:
	// an auth profile's (harness-auth-profile), not the server's default.
	r.stub.When("forget my profile", stubmodel.Text("noted"))
	profiled := profileInput(r, "forget my profile", "sk-forget-"+"0123456789")
	profiled.Cwd = in.Cwd
	withProfile := run(t, r, profiled, &recorder{})
	if err := r.c.Call(ctx, "fs/writeFile", map[string]any{"path": filepath.Join(in.Cwd, "notes.txt"), "dataBase64": "c2VjcmV0"}, nil); err != nil {
		t.Fatalf("write a file into the session's directory: %v", err)
	}

	archived, err := ForgetSession(ctx, r.c, in.Cwd)
	if err != nil || !sameIDs(archived, []string{res.ThreadID, withProfile.ThreadID}) {
		t.Fatalf("ForgetSession = %v, %v; want [%s %s] (the default provider's thread and the auth profile's)", archived, err, res.ThreadID, withProfile.ThreadID)
	}
	for _, id := range []string{res.ThreadID, withProfile.ThreadID} {
		if got := listThreads(t, r, in.Cwd, true); !slices.Contains(got, id) {
			t.Fatalf("archived threads in %s = %v; the session's thread %s is not archived", in.Cwd, got, id)
		}
	}
	if got := listThreads(t, r, in.Cwd, false); len(got) != 0 {
		t.Fatalf("unarchived threads left in %s: %v", in.Cwd, got)
	}
	dirs, err := ListDirectories(ctx, r.c, filepath.Dir(in.Cwd))
	if err != nil || slices.Contains(dirs, filepath.Base(in.Cwd)) || !slices.Contains(dirs, "session-2") {
		t.Fatalf("directories after ForgetSession = %v, %v; want session-2 only", dirs, err)
	}
	if got := listThreads(t, r, other.Cwd, false); !slices.Equal(got, []string{kept.ThreadID}) {
		t.Fatalf("another session's threads = %v, want [%s] untouched", got, kept.ThreadID)
	}
	// Again (a retried finalizer): nothing left, no error.
	if archived, err := ForgetSession(ctx, r.c, in.Cwd); err != nil || len(archived) != 0 {
		t.Fatalf("second ForgetSession = %v, %v", archived, err)
	}
	if dirs, err := ListDirectories(ctx, r.c, filepath.Join(in.Cwd, "missing")); err != nil || len(dirs) != 0 {
		t.Fatalf("ListDirectories of a missing directory = %v, %v", dirs, err)
	}
}

func listThreads(t *testing.T, r *rig, cwd string, archived bool) []string {
	t.Helper()
	ids, err := codextest.ThreadsIn(testCtx(t, 30*time.Second), r.c, cwd, archived)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}
