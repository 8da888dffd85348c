// Package storetest is the conformance suite of store.Store: every
// implementation runs it from a test of its own package,
//
//	func TestStoreConformance(t *testing.T) {
//		storetest.Run(t, storetest.Opener{Open: openMyStore})
//	}
//
// and passes only if it keeps the contract that the store package's
// documentation states. Time is a fake clock the suite steps, so lease expiry
// and retention are tested without sleeping. An implementation waits (for a
// lease, for events) in a select — it must also watch its context — and the
// suite finds its waiting goroutines there (goroutines.WaitBlocked) before it
// asserts that they are still waiting.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Config is what the suite opens a Store with. A zero limit means no limit:
// the suite sets the limits a test relies on.
type Config struct {
	// Clock is the store's clock for everything: timestamps, lease expiry,
	// the waits of Acquire and retention's age.
	Clock *clocktesting.FakeClock
	// MaxAge is the retention: Prune forgets runs that ended longer ago.
	MaxAge time.Duration
	// MaxRuns is how many ended runs keep their payload, across sessions.
	MaxRuns int
	// MaxNamespaceRuns bounds the runs one namespace holds.
	MaxNamespaceRuns int
	// MaxTranscriptBytes is the size limit of one session's transcript.
	MaxTranscriptBytes int64
}

// Opener opens the implementation under test.
type Opener struct {
	// Open opens the Store kept in storage with cfg. Within one test, the
	// same storage opens the same data — the suite closes the Store on it
	// before it opens it again, unless Shared — and a new name opens an
	// empty store. The suite closes every Store it opens (Close is
	// idempotent, so Open may close it at the test's cleanup as well).
	Open func(t *testing.T, storage string, cfg Config) store.Store
	// Shared says that Stores on one storage may be open at once, as the
	// dispatchers sharing a database are: the suite then plays each
	// "other dispatcher" with a second Store. Otherwise (the file journal:
	// one process owns a directory) the other dispatcher uses the same
	// Store, and the contract's atomicity is tested with goroutines.
	Shared bool
}

// behaviour is one row of the suite.
type behaviour struct {
	name string
	cfg  Config
	test func(t *testing.T, e *env)
}

// Run runs every behaviour of the contract against o, each as a subtest on
// fresh storage.
func Run(t *testing.T, o Opener) {
	var all []behaviour
	for _, group := range [][]behaviour{runBehaviours, leaseBehaviours, holdsBehaviours, fenceBehaviours, eventBehaviours,
		transcriptBehaviours, capacityBehaviours, recoveryBehaviours, sweepBehaviours, inboxBehaviours,
		retentionBehaviours, sessionBehaviours} {
		all = append(all, group...)
	}
	for _, b := range all {
		t.Run(b.name, func(t *testing.T) {
			cfg := b.cfg
			cfg.Clock = clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			e := &env{opener: o, cfg: cfg, clock: cfg.Clock}
			e.st = e.open(t)
			b.test(t, e)
		})
	}
}

// env is one behaviour's storage and the Store open on it.
type env struct {
	opener Opener
	cfg    Config
	clock  *clocktesting.FakeClock
	st     store.Store
}

const storageName = "storage"

func (e *env) open(t *testing.T) store.Store {
	t.Helper()
	st := e.opener.Open(t, storageName, e.cfg)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// reopen closes the Store and opens the same storage again, as a
// dispatcher's restart does.
func (e *env) reopen(t *testing.T) store.Store {
	t.Helper()
	if err := e.st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	e.st = e.open(t)
	return e.st
}

// peer is the Store another dispatcher on the same storage uses.
func (e *env) peer(t *testing.T) store.Store {
	t.Helper()
	if !e.opener.Shared {
		return e.st
	}
	return e.open(t)
}

// session is the key of test session i of namespace ns.
func session(ns string, i int) string {
	return fmt.Sprintf("%s/0b9c3d2e-7a41-4c1e-9f00-%012d", ns, i)
}

func digest(body string) [32]byte { return sha256.Sum256([]byte(body)) }

const (
	ttl     = 30 * time.Second
	timeout = 20 * time.Second // how long the suite waits for what must happen
)

func acquire(t *testing.T, st store.Store, session, owner string) store.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	lease, err := st.Acquire(ctx, session, owner, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", session, owner, err)
	}
	if lease.Session != session || lease.Owner != owner || lease.Token <= 0 {
		t.Fatalf("Acquire(%s, %s) = %+v: want the session, the owner and a positive token", session, owner, lease)
	}
	return lease
}

func release(t *testing.T, st store.Store, lease store.Lease) {
	t.Helper()
	if err := st.Release(context.Background(), lease); err != nil {
		t.Fatalf("Release(%+v): %v", lease, err)
	}
}

// claimNew claims runID for body under lease and wants BeginNew.
func claimNew(t *testing.T, st store.Store, lease store.Lease, runID, body string) store.Run {
	t.Helper()
	return claim(t, st, lease, runID, body, store.BeginNew)
}

func claim(t *testing.T, st store.Store, lease store.Lease, runID, body string, want store.BeginOutcome) store.Run {
	t.Helper()
	r, got, err := st.Claim(lease, runID, digest(body), store.Requester{})
	if err != nil {
		t.Fatalf("Claim(%s, %s): %v", lease.Session, runID, err)
	}
	if got != want {
		t.Fatalf("Claim(%s, %s) = %v, want %v", lease.Session, runID, got, want)
	}
	return r
}

func payload(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)) }

// appendN appends events with payloads payload(from) … payload(from+n-1).
func appendN(t *testing.T, r store.Run, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		seq, err := r.Append("partial", payload(i))
		if err != nil {
			t.Fatalf("Append %d: %v", i, err)
		}
		if seq != int64(i+1) {
			t.Fatalf("Append %d returned seq %d, want %d", i, seq, i+1)
		}
	}
}

func finish(t *testing.T, r store.Run) {
	t.Helper()
	if err := r.Finish(store.StateFinished, json.RawMessage(`{"ok":true}`)); err != nil {
		t.Fatalf("Finish: %v", err)
	}
}

// collect reads r's events after afterSeq to the end of the run.
func collect(t *testing.T, r store.Run, afterSeq int64) []store.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []store.Event
	for ev, err := range r.Events(ctx, afterSeq) {
		if err != nil {
			t.Fatalf("Events(%d): %v", afterSeq, err)
		}
		out = append(out, ev)
	}
	return out
}

// checkEvents checks that evs are the events appendN wrote with seq
// first..last.
func checkEvents(t *testing.T, evs []store.Event, first, last int64) {
	t.Helper()
	if int64(len(evs)) != last-first+1 {
		t.Fatalf("got %d events, want seq %d..%d", len(evs), first, last)
	}
	for i, ev := range evs {
		want := first + int64(i)
		if ev.Seq != want || ev.Type != "partial" || string(ev.Payload) != string(payload(int(want-1))) {
			t.Fatalf("event %d = %+v, want seq %d with payload %s", i, ev, want, payload(int(want-1)))
		}
	}
}

// wantErr fails unless errors.Is(err, target).
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: error %v, want %v", what, err, target)
	}
}
