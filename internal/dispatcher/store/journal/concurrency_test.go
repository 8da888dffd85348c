package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestConcurrentSubscribers runs one writer and many subscribers that attach
// at different points (run it with -race). Every subscriber must see exactly
// the events after its starting point, in order, then the end; a subscriber
// that stops reading must not hold up the writer; no goroutine outlives the
// test.
func TestConcurrentSubscribers(t *testing.T) {
	baseline := runtime.NumGoroutine()
	const events = 400
	j := open(t, t.TempDir(), Options{})
	w := begin(t, j, sess, "run-1", "body", BeginNew)

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	subscribe := func(after int64, want BeginOutcome) {
		r, outcome, err := j.Begin(sess, "run-1", digestOf("body"))
		if err != nil || outcome != want {
			errs <- fmt.Errorf("subscriber after %d: Begin = %v, want %v: %w", after, outcome, want, err)
			return
		}
		wg.Go(func() {
			evs, err := collect(r, after)
			if err != nil {
				errs <- err
				return
			}
			if int64(len(evs)) != events-after {
				errs <- fmt.Errorf("subscriber after %d got %d events", after, len(evs))
				return
			}
			for i, ev := range evs {
				if ev.Seq != after+int64(i)+1 || string(ev.Payload) != string(payload(int(ev.Seq-1))) {
					errs <- fmt.Errorf("subscriber after %d: event %d is %+v", after, i, ev)
					return
				}
			}
		})
	}

	// A slow subscriber: it takes one event, then stops reading until released.
	release := make(chan struct{})
	slowDone := make(chan int, 1)
	slow := begin(t, j, sess, "run-1", "body", BeginAttach)
	slowCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wg.Go(func() {
		n := 0
		for _, err := range slow.Events(slowCtx, 0) {
			if err != nil {
				break
			}
			n++
			if n == 1 {
				<-release
			}
		}
		slowDone <- n
	})

	for i := range 8 { // subscribers from the start
		subscribe(int64(i%3), BeginAttach)
	}
	// Subscribers joining while the run is going: the writer stops after
	// `at` events until the subscriber has attached, so each joins at a
	// known point, behind the writer (after < at) or ahead of it.
	joins := []struct{ at, after int64 }{{1, 0}, {50, 37}, {100, 150}, {150, 111}, {300, 299}, {399, 0}}
	reached := make(chan int64)
	joined := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		next := 0
		for i := range events {
			if next < len(joins) && int64(i) == joins[next].at {
				reached <- joins[next].at
				<-joined
				next++
			}
			if _, err := w.Append("partial", payload(i)); err != nil {
				writerDone <- err
				return
			}
			if i%50 == 0 {
				runtime.Gosched()
			}
		}
		writerDone <- w.Finish(StateFinished, json.RawMessage(`{"ok":true}`))
	}()
	for _, jn := range joins {
		if at := <-reached; at != jn.at {
			t.Fatalf("writer stopped at %d, want %d", at, jn.at)
		}
		subscribe(jn.after, BeginAttach)
		joined <- struct{}{}
	}

	select {
	case err := <-writerDone:
		if err != nil {
			t.Fatalf("writer: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the writer was held up (by the slow subscriber?)")
	}
	for _, after := range []int64{0, 259} { // subscribers joining after the run ended
		subscribe(after, BeginReplay)
	}
	select {
	case n := <-slowDone:
		t.Fatalf("slow subscriber finished with %d events before it was released", n)
	default:
	}
	close(release)
	if n := <-slowDone; n != events {
		t.Fatalf("slow subscriber got %d events, want %d", n, events)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		t.Fatalf("%d goroutines, %d before the test", n, baseline)
	}
}

// TestConcurrentBeginSameRunID: many resubmissions of one runId race; exactly
// one executes.
func TestConcurrentBeginSameRunID(t *testing.T) {
	j := open(t, t.TempDir(), Options{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		outcomes = map[BeginOutcome]int{}
		writers  []*Run
	)
	start := make(chan struct{})
	for range 32 {
		wg.Go(func() {
			<-start
			r, o, err := j.Begin(sess, "run-1", digestOf("body"))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			outcomes[o]++
			if o == BeginNew {
				writers = append(writers, r)
			}
		})
	}
	// Concurrent work on other runs and the transcript of the same session.
	for i := range 8 {
		wg.Go(func() {
			<-start
			r, _, err := j.Begin(sess, fmt.Sprintf("other-%d", i), digestOf("body"))
			if err != nil {
				t.Error(err)
				return
			}
			for k := range 20 {
				if _, err := r.Append("partial", payload(k)); err != nil {
					t.Error(err)
				}
				if err := j.AppendTranscript(sess, json.RawMessage(`{"k":1}`)); err != nil {
					t.Error(err)
				}
			}
			if err := r.Finish(StateFinished, nil); err != nil {
				t.Error(err)
			}
			if _, err := j.Prune(); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if outcomes[BeginNew] != 1 || outcomes[BeginAttach] != 31 || len(writers) != 1 {
		t.Fatalf("outcomes = %v, want exactly one new run", outcomes)
	}
	if n, err := j.TranscriptSize(sess); err != nil || n != 8*20*int64(len("{\"k\":1}\n")) {
		t.Fatalf("transcript size = %d, %v", n, err)
	}
}
