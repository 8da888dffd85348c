package journal

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// kill abandons j as a killed process does: nothing more is written (no
// end record, no lease kept), its files are closed unsynced and the
// directory's lock is released.
func kill(t testing.TB, j *Journal) {
	t.Helper()
	j.mu.Lock()
	j.closed.Store(true)
	close(j.closing)
	live := slices.Collect(func(yield func(*runState) bool) {
		for _, rs := range j.runs {
			if !yield(rs) {
				return
			}
		}
	})
	j.mu.Unlock()
	for _, rs := range live {
		rs.wmu.Lock()
		if rs.f != nil {
			_ = rs.f.Close()
			rs.f = nil
		}
		rs.wmu.Unlock()
	}
	j.releaseLock()
}

// grantNow acquires session's lease for owner only if it is free now: with
// a context that has already ended, a held lease fails with
// context.Canceled instead of being waited for.
func grantNow(j *Journal, session, owner string) (store.Lease, error) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return j.Acquire(ctx, session, owner, time.Minute)
}

// Tokens grow across restarts, whether the previous process closed the
// journal or crashed with leases held: every grant's token is above every
// token the directory's earlier processes gave out, for every session.
func TestLeaseTokensGrowAcrossRestartsAndCrashes(t *testing.T) {
	const other = "team-a/session-2"
	ctx := context.Background()
	j := open(t, t.TempDir(), Options{})
	var (
		given  = map[string][]int64{} // by session
		before int64                  // the greatest token of the processes before this one
		mine   int64                  // the greatest token of this process
	)
	grant := func(session string) store.Lease {
		t.Helper()
		lease, err := grantNow(j, session, "dispatcher-0")
		if err != nil {
			t.Fatalf("Acquire(%s): %v", session, err)
		}
		if lease.Token <= before {
			t.Fatalf("token %d of %s is not above %d, a token an earlier process gave out", lease.Token, session, before)
		}
		for _, earlier := range given[session] {
			if lease.Token <= earlier {
				t.Fatalf("token %d of %s is not above its earlier token %d (its tokens so far %v)", lease.Token, session, earlier, given[session])
			}
		}
		given[session] = append(given[session], lease.Token)
		mine = max(mine, lease.Token)
		return lease
	}
	restarted := func(next *Journal) {
		j, before = next, max(before, mine)
	}
	for range 3 {
		if err := j.Release(ctx, grant(sess)); err != nil {
			t.Fatal(err)
		}
	}
	grant(other) // held when the process dies
	kill(t, j)

	restarted(open(t, j.dir, Options{}))
	// Its holder died with the process: the lease is not held any more.
	held := grant(other)
	if err := j.Release(ctx, grant(sess)); err != nil {
		t.Fatal(err)
	}
	if err := j.Release(ctx, held); err != nil {
		t.Fatal(err)
	}
	restarted(reopen(t, j, Options{}))
	grant(sess)
	grant(other)
	kill(t, j) // both held, never written down
	restarted(open(t, j.dir, Options{}))
	grant(other)
	grant(sess)
}

// A lease held when the journal is closed stays held after Open until it
// expires (the holder's successor waits, Recover releases it), and the file
// that kept it is gone once it is back in memory.
func TestALeaseHeldAtCloseIsHeldAgainAfterOpen(t *testing.T) {
	clk := newClock()
	j := open(t, t.TempDir(), Options{Now: clk.Now})
	held, err := grantNow(j, sess, "dispatcher-0")
	if err != nil {
		t.Fatal(err)
	}
	leaseFile := filepath.Join(filepath.Dir(filepath.Dir(runFile(j, sess, "x"))), leaseFileName)
	if _, err := os.Stat(leaseFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lease.json while the journal is open: %v, want none (leases live in memory)", err)
	}
	j = reopen(t, j, Options{Now: clk.Now})
	if _, err := os.Stat(leaseFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("lease.json after Open: %v, want it removed", err)
	}
	if _, err := grantNow(j, sess, "dispatcher-1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire of the lease held at Close: %v, want it waited for (context.Canceled)", err)
	}
	if keys, err := j.Sessions(); err != nil || !slices.Contains(keys, sess) {
		t.Fatalf("Sessions() = %v, %v; want %s", keys, err, sess)
	}
	clk.Advance(time.Minute)
	next, err := grantNow(j, sess, "dispatcher-1")
	if err != nil {
		t.Fatalf("Acquire once the lease held at Close expired: %v", err)
	}
	if next.Token <= held.Token {
		t.Fatalf("token %d after the restart is not above %d", next.Token, held.Token)
	}
}

// Acquire, Renew and Release write nothing: a session's lease lives in
// memory, and a session with only a lease is listed for garbage collection
// all the same.
func TestLeaseChangesWriteNothing(t *testing.T) {
	var (
		mu    sync.Mutex
		syncs []string
	)
	j := open(t, t.TempDir(), Options{onSync: func(path string) {
		mu.Lock()
		defer mu.Unlock()
		syncs = append(syncs, path)
	}})
	mu.Lock()
	syncs = nil // Open's: the lease epoch
	mu.Unlock()
	ctx := context.Background()
	lease, err := grantNow(j, sess, "dispatcher-0")
	if err != nil {
		t.Fatal(err)
	}
	if lease, err = j.Renew(ctx, lease, time.Minute); err != nil {
		t.Fatal(err)
	}
	if keys, err := j.Sessions(); err != nil || !slices.Equal(keys, []string{sess}) {
		t.Fatalf("Sessions() = %v, %v; want [%s] (its lease)", keys, err, sess)
	}
	if err := j.Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(syncs) != 0 {
		t.Fatalf("Acquire, Renew and Release fsynced %v, want nothing", syncs)
	}
	if _, err := os.Stat(filepath.Join(j.dir, sessionsDirName, "team-a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the lease created the session's directories (%v): it should write nothing", err)
	}
}

// A turn fsyncs four times, in this order: its run file and the runs
// directory when it is claimed (a claimed run is never replayed), the run
// file when it ends (the run's durable end, its events with it), and the
// transcript (SyncTranscript). The lease adds none.
func TestATurnFsyncsItsClaimItsEndAndItsTranscript(t *testing.T) {
	var (
		mu    sync.Mutex
		syncs []string
	)
	j := open(t, t.TempDir(), Options{onSync: func(path string) {
		mu.Lock()
		defer mu.Unlock()
		syncs = append(syncs, path)
	}})
	shortTurn(t, j, sess, "run-1") // the session's directories become durable once
	mu.Lock()
	syncs = nil
	mu.Unlock()
	shortTurn(t, j, sess, "run-2")
	run := runFile(j, sess, "run-2")
	want := []string{run, filepath.Dir(run), run, transcriptPath(j, sess)}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(syncs, want) {
		t.Fatalf("a turn fsynced\n  %s\nwant\n  %s", strings.Join(syncs, "\n  "), strings.Join(want, "\n  "))
	}
}

// A journal written before leases lived in memory keeps a lease.json per
// session with small tokens and no lease epoch: the first grant after the
// upgrade is above the token kept, however large.
func TestTokensAfterAnUpgradeAreAboveTheTokensOfLeaseFiles(t *testing.T) {
	for _, kept := range []int64{7, 5<<leaseEpochShift + 9} {
		t.Run(strconv.FormatInt(kept, 10), func(t *testing.T) {
			dir := t.TempDir()
			sessionDir := filepath.Join(dir, sessionsDirName, "team-a", "session-1")
			if err := os.MkdirAll(sessionDir, dirMode); err != nil {
				t.Fatal(err)
			}
			rec := `{"owner":"dispatcher-0","token":` + strconv.FormatInt(kept, 10) + `,"expires":"2026-03-01T12:00:00Z","held":false}` + "\n"
			if err := os.WriteFile(filepath.Join(sessionDir, leaseFileName), []byte(rec), fileMode); err != nil {
				t.Fatal(err)
			}
			j := open(t, dir, Options{})
			lease, err := grantNow(j, sess, "dispatcher-0")
			if err != nil {
				t.Fatal(err)
			}
			if lease.Token <= kept {
				t.Fatalf("token %d after the upgrade is not above the kept token %d", lease.Token, kept)
			}
		})
	}
}

// A lease epoch that cannot be read stops Open, naming the file: guessing
// could give a token out twice.
func TestADamagedLeaseEpochFailsOpen(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, leaseEpochFileName), []byte("{\"epo"), fileMode); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), leaseEpochFileName) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("Open with a damaged lease epoch: %v, want an error naming %s as damaged", err, leaseEpochFileName)
	}
}

// A token is the epoch above the session's grant count: the first grant of
// an epoch starts at 1, the next ones count up, and the count never wraps
// into the next epoch (a token would then be given out twice).
func TestNextLeaseToken(t *testing.T) {
	j := &Journal{leaseEpoch: 3}
	for _, tc := range []struct {
		prev, want int64
		fails      bool
	}{
		{prev: 0, want: 3<<leaseEpochShift + 1},
		{prev: 2<<leaseEpochShift + 77, want: 3<<leaseEpochShift + 1},
		{prev: 3<<leaseEpochShift + 1, want: 3<<leaseEpochShift + 2},
		{prev: 3<<leaseEpochShift + leaseCountMask, fails: true},
	} {
		got, err := j.nextLeaseToken(tc.prev)
		if tc.fails {
			if err == nil || !strings.Contains(err.Error(), "used up") {
				t.Errorf("nextLeaseToken(%d) = %d, %v; want the epoch's tokens used up", tc.prev, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("nextLeaseToken(%d) = %d, %v; want %d", tc.prev, got, err, tc.want)
		}
	}
}
