package journal

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil/tmpfs"
)

// diskFullPayload is an `error` payload larger than a page, so that no file
// on a full tmpfs can take it within its last page.
func diskFullPayload() json.RawMessage {
	return json.RawMessage(`{"code":"HarnessUnavailable","message":"the journal refused a write ` + strings.Repeat("x", 2*os.Getpagesize()) + `"}`)
}

// A run whose end cannot be written because the journal's file system is
// full still ends for the readers of this process: a live reader sees the
// `error` event last and the run end failed with it, and Lookup (what GET
// …/turns/{runId} reads) answers failed with the error. The end is not
// durable: after a restart the run is found running and recovered as failed,
// outcome unknown. Either the `error` event could not be written either (it
// is then published in memory only), or it was and only the end record
// failed.
func TestARunThatCannotBeRecordedOnAFullDiskStillEndsFailedForItsReaders(t *testing.T) {
	for _, tc := range []struct {
		name              string
		errorEventWritten bool
	}{
		{"its error event and end are not written", false},
		{"its end is not written", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tmpfs.Mount(t, 2<<20)
			j := open(t, dir, Options{})
			w := begin(t, j, sess, "run-1", "body", BeginNew)
			appendN(t, w, 1)
			follower := begin(t, j, sess, "run-1", "body", BeginAttach)
			followed := collectAsync(follower)

			if _, err := j.Post(sess, "run-1", store.InboxMessage{Kind: store.InboxInterrupt}); err != nil {
				t.Fatalf("Post: %v", err)
			}
			errPayload := diskFullPayload()
			if tc.errorEventWritten {
				if _, err := w.Append("error", errPayload); err != nil {
					t.Fatal(err)
				}
			}
			filler := tmpfs.Fill(t, dir, "filler")
			if !tc.errorEventWritten {
				if _, err := w.Append("error", errPayload); !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("Append on a full disk: %v, want ENOSPC", err)
				}
			}
			if err := w.Finish(StateFailed, errPayload); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Finish on a full disk: %v, want ENOSPC", err)
			}
			checkEndedFailed(t, j, followed, errPayload, w, follower)
			// Its state stays in memory with its inbox, which is the
			// running turn's: an answer posted before the end is not
			// read after it.
			for m, err := range j.Inbox(context.Background(), store.RunRef{Session: sess, RunID: "run-1"}, 0) {
				t.Fatalf("Inbox of the run that ended unrecorded yielded %+v, %v; want nothing", m, err)
			}

			// A restart with space again: the end was not recorded, so
			// the run is found running and recovery fails it without a
			// result.
			tmpfs.Remove(t, filler)
			j = reopen(t, j, Options{})
			if running := j.Running(); len(running) != 1 || running[0].RunID != "run-1" {
				t.Fatalf("after the restart Running() = %+v, want run-1", running)
			}
			if _, err := j.Recover(context.Background(), "dispatcher-0", "the dispatcher restarted"); err != nil {
				t.Fatal(err)
			}
			durable := int64(1)
			if tc.errorEventWritten {
				durable = 2
			}
			r := begin(t, j, sess, "run-1", "body", BeginReplay)
			if info := r.Info(); info.State != StateFailed || info.Result != nil || info.LastSeq != durable {
				t.Fatalf("after recovery Info() = %+v, want failed, no result, lastSeq %d", info, durable)
			}
		})
	}
}

// checkEndedFailed checks that the run-1 of sess has ended failed with
// errPayload, its `error` event (seq 2) last, for its live reader, its
// handles, Lookup and Begin.
func checkEndedFailed(t *testing.T, j *Journal, followed <-chan []Event, errPayload json.RawMessage, handles ...*Run) {
	t.Helper()
	select {
	case evs := <-followed:
		if len(evs) != 2 || evs[1].Seq != 2 || evs[1].Type != "error" || string(evs[1].Payload) != string(errPayload) {
			t.Fatalf("the live reader saw %d events %+v, want the partial and then the error event (seq 2)", len(evs), evs)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the live reader did not see the run end: a Finish that could not be written left it running")
	}
	got, err := j.Lookup(sess, "run-1")
	if err != nil {
		t.Fatalf("Lookup of the run on a full disk: %v", err)
	}
	for _, r := range append(handles, got) {
		if info := r.Info(); info.State != StateFailed || string(info.Result) != string(errPayload) || info.LastSeq != 2 {
			t.Fatalf("Info() = state %s, lastSeq %d, result %.80s…; want failed, 2, the error", info.State, info.LastSeq, info.Result)
		}
	}
	if _, outcome, err := j.Begin(sess, "run-1", digestOf("body")); err != nil || outcome != BeginReplay {
		t.Fatalf("Begin of the same runId = %v, %v; want BeginReplay (it never runs again)", outcome, err)
	}
	if _, err := handles[0].Append("partial", nil); !errors.Is(err, ErrRunEnded) {
		t.Fatalf("Append after the unrecorded end: %v, want ErrRunEnded", err)
	}
}

// A session whose turn failed on a full disk can be deleted while the disk
// is still full (deleting is what frees the space): the run ended although
// its end was not written, and the lease, which lives in memory, is
// released as on any disk.
func TestASessionWhoseTurnFailedOnAFullDiskCanBeDeletedWhileItIsFull(t *testing.T) {
	dir := tmpfs.Mount(t, 2<<20)
	j := open(t, dir, Options{})
	ctx := context.Background()
	lease, err := j.Acquire(ctx, sess, "dispatcher-0", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w, _, err := j.Claim(lease, "run-1", digestOf("body"), Requester{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append("partial", payload(0)); err != nil {
		t.Fatal(err)
	}

	tmpfs.Fill(t, dir, "filler")
	errPayload := diskFullPayload()
	if _, err := w.Append("error", errPayload); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Append on a full disk: %v, want ENOSPC", err)
	}
	if err := w.Finish(StateFailed, errPayload); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Finish on a full disk: %v, want ENOSPC", err)
	}
	if err := j.Release(ctx, lease); err != nil {
		t.Fatalf("Release on a full disk: %v, want it released (a lease writes nothing)", err)
	}

	if err := j.DeleteSession(sess); err != nil {
		t.Fatalf("DeleteSession on a full disk: %v", err)
	}
	if _, err := j.Lookup(sess, "run-1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup after DeleteSession: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(runFile(j, sess, "run-1")))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the session's directory is still there: %v", err)
	}
}
