//go:build postgres

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/sse"
	"github.com/openclaw/harness-operator/internal/wire"
	"github.com/openclaw/harness-operator/test/stubmodel"
)

// TestRollingRestartAndKillUnderLoad is issue 20's fault campaign on
// processes (`make load-replicas`; minutes, not part of CI): three
// dispatcher replicas on one PostgreSQL under continuous load from 20
// sessions, each turn ~1 s of streamed reply, each client acting as a
// gateway does — a turn posted to a replica that is gone is posted to
// another with the same body, a stream that breaks is resumed with
// Last-Event-ID on another.
//   - A rolling restart: SIGTERM to one replica at a time while it runs
//     turns, its replacement started and ready before the next: 0 turns
//     fail, 0 are lost, 0 run twice.
//   - A replica SIGKILLed while it runs turns: exactly the turns it had
//     claimed and not finished fail (replaySafe false) once the survivors'
//     sweep ends them; every other turn completes.
func TestRollingRestartAndKillUnderLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const sessions = 20
	names := make([]string, sessions)
	for i := range names {
		names[i] = "s" + strconv.Itoa(i)
	}
	env := newReplicaEnv(ctx, t, "dispatcher-load", names...)
	l := &load{env: env, t: t, outcomes: map[string]turnOutcome{}, claimedOn: map[string]string{}}
	for i := range 3 {
		l.add(env.start("replica-" + strconv.Itoa(i)))
	}
	var clients sync.WaitGroup
	for _, s := range names {
		clients.Go(func() { l.client(ctx, s) })
	}

	// Rolling restart.
	restartStart := time.Now()
	for i := range 3 {
		old := l.replicas()[0]
		l.waitRunning(old.name)
		l.remove(old.name) // new turns go elsewhere; its streams run on while it drains
		running := len(l.runningOn(old.name))
		t.Logf("SIGTERM %s with %d turns running on it: %s", old.name, running, old.proc.Stop(45*time.Second))
		l.add(env.start("replica-new-" + strconv.Itoa(i)))
	}
	restartTook := time.Since(restartStart)
	restart := l.snapshot()

	// Kill one replica mid-turn.
	victim := l.replicas()[0]
	l.waitRunning(victim.name)
	l.remove(victim.name)
	doomed := l.runningOn(victim.name)
	killed := time.Now()
	_ = syscall.Kill(-victim.proc.Pid(), syscall.SIGKILL)
	l.waitEnded(doomed, 90*time.Second)
	endedIn := time.Since(killed)

	l.stop.Store(true)
	clients.Wait()
	all := l.snapshot()

	// The rolling restart: nothing failed, nothing ran twice.
	for id, o := range restart {
		if !o.ok {
			t.Errorf("rolling restart: turn %s failed: %+v", id, o)
		}
	}
	// The kill: the doomed turns failed with replaySafe false (or had
	// finished just before the signal); nothing else failed.
	failedDoomed := 0
	for id, o := range all {
		_, wasDoomed := doomed[id]
		switch {
		case o.ok:
		case wasDoomed && o.code == string(wire.CodeHarnessUnavailable) && !o.replaySafe:
			failedDoomed++
		default:
			t.Errorf("turn %s ended %+v (doomed %v)", id, o, wasDoomed)
		}
	}
	if failedDoomed == 0 {
		t.Errorf("no turn of the killed replica failed: %d were running on it", len(doomed))
	}
	for id, o := range all {
		if n := len(env.fx.stub.RequestsContaining("load-" + id + " ")); o.ok && n != 1 {
			t.Errorf("turn %s asked the model %d times, want once", id, n)
		}
	}
	if lost := l.sent.Load() - int64(len(all)); lost != 0 {
		t.Errorf("%d turns were sent and never ended", lost)
	}
	t.Logf("rolling restart of 3 replicas in %s: %d turns, 0 failed; SIGKILL with %d turns running: %d failed (replaySafe false) within %s of the kill; %d turns in all",
		restartTook.Round(time.Second), len(restart), len(doomed), failedDoomed, endedIn.Round(time.Second), len(all))
}

type turnOutcome struct {
	ok         bool
	code       string
	replaySafe bool
	replica    string // where it was claimed
}

// load is the gateways' side: the replicas that serve, and what became of
// each turn.
type load struct {
	env  *replicaEnv
	t    *testing.T
	stop atomic.Bool
	sent atomic.Int64

	mu        sync.Mutex
	serving   []*replica
	next      int
	claimedOn map[string]string // runId → replica, while it runs
	outcomes  map[string]turnOutcome
	changed   sync.Cond
}

func (l *load) add(r *replica) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.serving = append(l.serving, r)
}

func (l *load) remove(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.serving {
		if r.name == name {
			l.serving = append(l.serving[:i], l.serving[i+1:]...)
			return
		}
	}
}

func (l *load) replicas() []*replica {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*replica(nil), l.serving...)
}

func (l *load) pick() *replica {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	return l.serving[l.next%len(l.serving)]
}

// runningOn are the turns claimed on the replica and not ended.
func (l *load) runningOn(name string) map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for id, r := range l.claimedOn {
		if r == name {
			out[id] = true
		}
	}
	return out
}

func (l *load) cond() *sync.Cond {
	if l.changed.L == nil {
		l.changed.L = &l.mu
	}
	return &l.changed
}

// waitRunning waits until the replica has claimed turns that run.
func (l *load) waitRunning(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		n := 0
		for _, r := range l.claimedOn {
			if r == name {
				n++
			}
		}
		if n >= 2 {
			return
		}
		l.cond().Wait()
	}
}

// waitEnded waits until every turn in ids has an outcome.
func (l *load) waitEnded(ids map[string]bool, timeout time.Duration) {
	deadline := time.AfterFunc(timeout, func() {
		l.mu.Lock()
		l.cond().Broadcast()
		l.mu.Unlock()
	})
	defer deadline.Stop()
	start := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		left := 0
		for id := range ids {
			if _, ok := l.outcomes[id]; !ok {
				left++
			}
		}
		if left == 0 {
			return
		}
		if time.Since(start) > timeout {
			l.t.Fatalf("%d turns of the killed replica did not end within %s", left, timeout)
		}
		l.cond().Wait()
	}
}

func (l *load) snapshot() map[string]turnOutcome {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]turnOutcome, len(l.outcomes))
	for k, v := range l.outcomes {
		out[k] = v
	}
	return out
}

func (l *load) claimed(runID, on string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.claimedOn[runID] = on
	l.cond().Broadcast()
}

func (l *load) ended(runID string, o turnOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o.replica = l.claimedOn[runID]
	delete(l.claimedOn, runID)
	l.outcomes[runID] = o
	l.cond().Broadcast()
}

// client is one session's gateway: turn after turn until the load stops.
func (l *load) client(ctx context.Context, session string) {
	for n := 0; !l.stop.Load() && ctx.Err() == nil; n++ {
		runID := session + "-" + strconv.Itoa(n)
		marker := "load-" + runID + " "
		l.env.fx.stub.When(marker, stubmodel.SlowText("done "+runID, 120*time.Millisecond, "a ", "b ", "c ", "d ", "e ", "f ", "g ", "h "))
		body := fmt.Sprintf(`{"runId":%q,"prompt":"%sgo"}`, runID, marker)
		l.sent.Add(1)
		l.turn(ctx, session, runID, body)
	}
}

// turn runs one turn to its end, as a gateway: another replica when one is
// gone, the stream resumed where it broke.
func (l *load) turn(ctx context.Context, session, runID, body string) {
	lastID := ""
	for attempt := 0; ctx.Err() == nil; attempt++ {
		r := l.pick()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/"+session+"/turns", strings.NewReader(body))
		if err != nil {
			l.t.Error(err)
			return
		}
		req.Header.Set("Authorization", "Bearer "+l.env.fx.gateway)
		req.Header.Set("Content-Type", "application/json")
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := r.hc.Do(req)
		if err != nil {
			continue // the replica is gone: another one
		}
		if resp.StatusCode != http.StatusOK {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable {
				continue
			}
			l.ended(runID, turnOutcome{code: "HTTP " + strconv.Itoa(resp.StatusCode)})
			return
		}
		if lastID == "" {
			l.claimed(runID, r.name)
		}
		var end *turnOutcome
		_ = sse.Read(resp.Body, func(ev sse.Event) bool {
			lastID = ev.ID
			switch ev.Type {
			case wire.EventResult:
				end = &turnOutcome{ok: true}
				return false
			case wire.EventError:
				var e wire.Error
				_ = json.Unmarshal(ev.Data, &e)
				end = &turnOutcome{code: string(e.Code), replaySafe: e.ReplaySafe == nil || *e.ReplaySafe}
				return false
			}
			return true
		})
		_ = resp.Body.Close()
		if end != nil {
			l.ended(runID, *end)
			return
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return
		}
	}
}
