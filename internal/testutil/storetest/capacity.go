package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

var capacityBehaviours = []behaviour{
	{name: "ConcurrentReservesNeverExceedTheLimit", test: testReserveRace},
	{name: "ReserveIsIdempotentPerSession", test: testReserveIdempotent},
	{name: "UnreserveAndSessionDeletionFreePlaces", test: testReserveFreed},
	{name: "ReservationsSurviveRestart", test: testReserveDurable},
}

const server = "team-a/harness-0"

func reserved(t *testing.T, st store.Store, server string) int {
	t.Helper()
	n, err := st.Reserved(context.Background(), server)
	if err != nil {
		t.Fatalf("Reserved(%s): %v", server, err)
	}
	return n
}

func reserve(t *testing.T, st store.Store, server, session string, limit int) {
	t.Helper()
	if err := st.Reserve(context.Background(), server, session, limit); err != nil {
		t.Fatalf("Reserve(%s, %s, %d): %v", server, session, limit, err)
	}
}

func wantAtCapacity(t *testing.T, st store.Store, server, session string, limit int) {
	t.Helper()
	err := st.Reserve(context.Background(), server, session, limit)
	var ce *store.CapacityError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrAtCapacity) {
		t.Fatalf("Reserve(%s, %s, %d): %v, want a *CapacityError", server, session, limit, err)
	}
	if ce.Server != server || ce.Held != limit || ce.Limit != limit {
		t.Fatalf("capacity error = %+v, want server %s holding %d of %d", ce, server, limit, limit)
	}
}

// testReserveRace: sessions of both dispatchers race for the places on one
// server; exactly limit of them get one.
func testReserveRace(t *testing.T, e *env) {
	const sessions, limit = 24, 5
	stores := []store.Store{e.st, e.peer(t)}
	errs := make([]error, sessions)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			<-start
			errs[i] = stores[i%2].Reserve(context.Background(), server, session("team-a", i), limit)
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrAtCapacity):
			t.Fatalf("Reserve of session %d: %v, want nil or ErrAtCapacity", i, err)
		}
	}
	if ok != limit || reserved(t, e.st, server) != limit {
		t.Fatalf("%d Reserves succeeded and Reserved says %d, want %d", ok, reserved(t, e.st, server), limit)
	}
}

// testReserveIdempotent: a session reserving again keeps its one place — also
// when the server is full — and limits are checked.
func testReserveIdempotent(t *testing.T, e *env) {
	s1, s2 := session("team-a", 1), session("team-a", 2)
	reserve(t, e.st, server, s1, 1)
	reserve(t, e.peer(t), server, s1, 1)
	if n := reserved(t, e.st, server); n != 1 {
		t.Fatalf("Reserved after the same session reserved twice = %d, want 1", n)
	}
	wantAtCapacity(t, e.st, server, s2, 1)
	if n := reserved(t, e.st, "team-a/harness-1"); n != 0 {
		t.Fatalf("Reserved of another server = %d, want 0", n)
	}
	wantErr(t, "Reserve with limit 0", e.st.Reserve(context.Background(), server, s2, 0), store.ErrInvalidReservation)
	wantErr(t, "Reserve without a server", e.st.Reserve(context.Background(), "", s2, 1), store.ErrInvalidReservation)
}

// testReserveFreed: Unreserve and DeleteSession give places back, on every
// server the session held one.
func testReserveFreed(t *testing.T, e *env) {
	s1, s2, s3 := session("team-a", 1), session("team-a", 2), session("team-a", 3)
	other := "team-a/harness-1"
	reserve(t, e.st, server, s1, 2)
	reserve(t, e.st, server, s2, 2)
	reserve(t, e.st, other, s2, 2)
	wantAtCapacity(t, e.st, server, s3, 2)
	if err := e.st.Unreserve(context.Background(), server, s1); err != nil {
		t.Fatalf("Unreserve: %v", err)
	}
	if err := e.st.Unreserve(context.Background(), server, s1); err != nil {
		t.Fatalf("Unreserve of a place not held: %v", err)
	}
	reserve(t, e.peer(t), server, s3, 2)
	if err := e.st.DeleteSession(s2); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if n, m := reserved(t, e.st, server), reserved(t, e.st, other); n != 1 || m != 0 {
		t.Fatalf("after deleting a session with two places: Reserved = %d and %d, want 1 and 0", n, m)
	}
}

// testReserveDurable: places are counted after a restart as before it, and
// the limit holds against them.
func testReserveDurable(t *testing.T, e *env) {
	s1, s2, s3 := session("team-a", 1), session("team-a", 2), session("team-a", 3)
	other := "team-a/harness-1"
	reserve(t, e.st, server, s1, 2)
	reserve(t, e.st, server, s2, 2)
	reserve(t, e.st, other, s1, 2)
	st := e.reopen(t)
	if n, m := reserved(t, st, server), reserved(t, st, other); n != 2 || m != 1 {
		t.Fatalf("after restart Reserved = %d and %d, want 2 and 1", n, m)
	}
	wantAtCapacity(t, st, server, s3, 2)
	reserve(t, st, server, s1, 2)
	if err := st.Unreserve(context.Background(), server, s2); err != nil {
		t.Fatalf("Unreserve: %v", err)
	}
	st = e.reopen(t)
	if n, m := reserved(t, st, server), reserved(t, st, other); n != 1 || m != 1 {
		t.Fatalf("after Unreserve and restart Reserved = %d and %d, want 1 and 1", n, m)
	}
}
