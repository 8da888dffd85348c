package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/testutil/goroutines"
)

var inboxBehaviours = []behaviour{
	{name: "AnswersPostedThroughAnyDispatcherReachTheOwnerInOrder", test: testInboxDelivery},
	{name: "InboxWakesOnPostWithoutPollingAndEndsWithTheRun", test: testInboxWake},
	{name: "ARequestIsAnsweredOnce", test: testInboxDuplicate},
	{name: "PostToAnEndedOrUnknownRunIsRefused", test: testInboxEnded},
	{name: "InboxEndsWithItsContextOrTheStore", test: testInboxEnd},
}

// answers are one message of each kind, as a gateway posts them.
var answers = []store.InboxMessage{
	{Kind: store.InboxToolResult, Key: "call-1", Payload: json.RawMessage(`{ "output": "42" }`)},
	{Kind: store.InboxApproval, Key: "req-1", Payload: json.RawMessage(`{"decision":"approved"}`)},
	{Kind: store.InboxUserInput, Key: "req-2", Payload: json.RawMessage(`{"answers":{"q":"yes"}}`)},
	{Kind: store.InboxInterrupt},
}

// running claims run-1 of session i under dispatcher-a's lease on st.
func running(t *testing.T, st store.Store, i int) (store.Lease, store.Run) {
	t.Helper()
	lease := acquire(t, st, session("team-a", i), "dispatcher-a")
	return lease, claimNew(t, st, lease, "run-1", "body")
}

func post(t *testing.T, st store.Store, ref store.RunRef, m store.InboxMessage) int64 {
	t.Helper()
	seq, err := st.Post(ref.Session, ref.RunID, m)
	if err != nil {
		t.Fatalf("Post(%s %q): %v", m.Kind, m.Key, err)
	}
	return seq
}

// stored is how the store keeps each of answers: the interrupt under its
// fixed key, payloads compacted.
var stored = []struct{ key, payload string }{
	{"call-1", `{"output":"42"}`}, {"req-1", `{"decision":"approved"}`}, {"req-2", `{"answers":{"q":"yes"}}`}, {store.InterruptKey, ""},
}

// checkAnswer checks that got is answers[i] as stored, with Seq i+1.
func checkAnswer(t *testing.T, got store.InboxMessage, i int) {
	t.Helper()
	want := stored[i]
	if got.Seq != int64(i+1) || got.Kind != answers[i].Kind || got.Key != want.key || string(got.Payload) != want.payload || got.At.IsZero() {
		t.Fatalf("inbox message %d = %+v (payload %s), want seq %d, %s %q with payload %q and a time",
			i, got, got.Payload, i+1, answers[i].Kind, want.key, want.payload)
	}
}

// testInboxDelivery: answers accepted by another dispatcher than the turn's
// owner reach the owner's Inbox in the order they were posted, each kind
// with its key and compacted payload; a reader resuming after message N
// gets the ones after it.
func testInboxDelivery(t *testing.T, e *env) {
	_, w := running(t, e.st, 1)
	ref, other := w.Ref(), e.peer(t)
	for i, m := range answers {
		if seq := post(t, other, ref, m); seq != int64(i+1) {
			t.Fatalf("Post %d returned seq %d, want %d", i, seq, i+1)
		}
	}
	owner := followInbox(t, e.st, ref, 0)
	for i := range answers {
		checkAnswer(t, owner.next(t), i)
	}
	resumed := followInbox(t, e.st, ref, 2)
	checkAnswer(t, resumed.next(t), 2)
	checkAnswer(t, resumed.next(t), 3)
}

// testInboxWake: an owner that read its inbox waits for the next answer —
// in a select, with no timer on the store's clock — and is woken by a Post
// through another dispatcher; an answer posted just before the run ends is
// still read, and the run's end ends the reading.
func testInboxWake(t *testing.T, e *env) {
	_, w := running(t, e.st, 1)
	ref, other := w.Ref(), e.peer(t)
	owner := followInbox(t, e.st, ref, 0)
	for i := range 3 {
		goroutines.WaitBlocked(t, "storetest.readInbox", 1)
		if n := e.clock.Waiters(); n != 0 {
			t.Fatalf("a waiting inbox reader has %d timers on the store's clock: it must be woken by the Post, not poll", n)
		}
		post(t, other, ref, answers[i])
		checkAnswer(t, owner.next(t), i)
	}
	goroutines.WaitBlocked(t, "storetest.readInbox", 1)
	post(t, other, ref, answers[3])
	finish(t, w)
	checkAnswer(t, owner.next(t), 3)
	if err := owner.end(t); err != nil {
		t.Fatalf("the inbox ended with %v, want the run's end", err)
	}
}

// testInboxDuplicate: a request is answered once — a second answer with
// the same kind and key, through any dispatcher, even at the same moment,
// is refused with what was recorded, and only one reaches the owner; the
// same key of another kind is another answer.
func testInboxDuplicate(t *testing.T, e *env) {
	_, w := running(t, e.st, 1)
	ref, other := w.Ref(), e.peer(t)
	deny := store.InboxMessage{Kind: store.InboxApproval, Key: "req-1", Payload: json.RawMessage(`{"decision":"denied"}`)}
	const racers = 16
	errs := make([]error, racers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		st := []store.Store{e.st, other}[i%2]
		wg.Go(func() {
			<-start
			_, errs[i] = st.Post(ref.Session, ref.RunID, deny)
		})
	}
	close(start)
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		var pe *store.AlreadyPostedError
		switch {
		case err == nil:
			accepted++
		case errors.As(err, &pe) && errors.Is(err, store.ErrAlreadyPosted):
			if pe.Seq != 1 || pe.Kind != store.InboxApproval || pe.Key != "req-1" || pe.RunID != ref.RunID || pe.Session != ref.Session {
				t.Fatalf("refused duplicate: %+v, want the recorded approval req-1 with seq 1", pe)
			}
		default:
			t.Fatalf("a concurrent answer to one request: %v, want nil or an *AlreadyPostedError", err)
		}
	}
	if accepted != 1 {
		t.Fatalf("%d of %d concurrent answers to one request were accepted, want exactly 1", accepted, racers)
	}
	if seq := post(t, other, ref, store.InboxMessage{Kind: store.InboxUserInput, Key: "req-1"}); seq != 2 {
		t.Fatalf("the user-input answer req-1 got seq %d, want 2 (another kind is another request)", seq)
	}
	post(t, e.st, ref, store.InboxMessage{Kind: store.InboxInterrupt})
	_, err := other.Post(ref.Session, ref.RunID, store.InboxMessage{Kind: store.InboxInterrupt, Key: store.InterruptKey})
	wantErr(t, "a second interrupt", err, store.ErrAlreadyPosted)
	owner := followInbox(t, e.st, ref, 0)
	for i, kind := range []store.InboxKind{store.InboxApproval, store.InboxUserInput, store.InboxInterrupt} {
		if m := owner.next(t); m.Seq != int64(i+1) || m.Kind != kind {
			t.Fatalf("inbox message %d = %+v, want seq %d of kind %s", i, m, i+1, kind)
		}
	}
	finish(t, w)
	if err := owner.end(t); err != nil {
		t.Fatalf("the inbox ended with %v after its 3 messages, want the run's end", err)
	}
}

// testInboxEnded: answers to a run that ended — finished, or taken over by
// Sweep — or to a run nobody claimed are refused; a message the store
// cannot keep is refused naming its field; the inbox of an ended run
// yields nothing.
func testInboxEnded(t *testing.T, e *env) {
	_, w := running(t, e.st, 1)
	ref, other := w.Ref(), e.peer(t)
	_, err := other.Post(ref.Session, "run-2", answers[0])
	wantErr(t, "Post to an unknown run", err, store.ErrNotFound)
	_, err = other.Post(ref.Session, ref.RunID, store.InboxMessage{Kind: "tool-result", Key: "call-1"})
	wantErr(t, "Post of an unknown kind", err, store.ErrInvalidMessage)
	var unknown error
	for _, err := range e.st.Inbox(context.Background(), store.RunRef{Session: ref.Session, RunID: "run-2"}, 0) {
		unknown = err
	}
	wantErr(t, "Inbox of an unknown run", unknown, store.ErrNotFound)
	post(t, other, ref, answers[0])
	finish(t, w)
	_, err = other.Post(ref.Session, ref.RunID, answers[1])
	wantErr(t, "Post to a finished run", err, store.ErrRunEnded)
	for m, err := range other.Inbox(context.Background(), ref, 0) {
		t.Fatalf("Inbox of a finished run yielded %+v, %v; want nothing", m, err)
	}

	_, swept := running(t, e.st, 2)
	e.clock.Step(ttl)
	if _, err := other.Sweep(context.Background(), reason); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	_, err = e.st.Post(swept.Ref().Session, swept.Ref().RunID, answers[1])
	wantErr(t, "Post to a run Sweep ended", err, store.ErrRunEnded)
}

// testInboxEnd: a waiting inbox reader stops with its context's error, and
// with ErrClosed when the Store closes.
func testInboxEnd(t *testing.T, e *env) {
	_, w := running(t, e.st, 1)
	cancelled := followInbox(t, e.st, w.Ref(), 0)
	closed := followInbox(t, e.st, w.Ref(), 0)
	goroutines.WaitBlocked(t, "storetest.readInbox", 2)
	cancelled.cancel()
	if err := cancelled.end(t); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled inbox reader ended with %v, want context.Canceled", err)
	}
	if err := e.st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantErr(t, "an inbox reader waiting at Close", closed.end(t), store.ErrClosed)
}
