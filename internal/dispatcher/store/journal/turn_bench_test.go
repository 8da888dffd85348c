package journal

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// shortTurn runs one short turn of session through the store API in the
// engine's order (engine/start.go, run.go, relay.go): Admit, FindRun (not
// known), Acquire, FindRun again under the lease, Claim, the `selected`
// event, a few partials, two transcript records, the `result` event, Finish,
// SyncTranscript, Release.
func shortTurn(tb testing.TB, j *Journal, session, runID string) {
	tb.Helper()
	ctx := context.Background()
	if err := j.Admit(session); err != nil {
		tb.Fatalf("Admit: %v", err)
	}
	if _, err := j.FindRun(session, runID); !errors.Is(err, ErrNotFound) {
		tb.Fatalf("FindRun before the claim: %v, want ErrNotFound", err)
	}
	lease, err := j.Acquire(ctx, session, "dispatcher-0", 30*time.Second)
	if err != nil {
		tb.Fatalf("Acquire: %v", err)
	}
	if _, err := j.FindRun(session, runID); !errors.Is(err, ErrNotFound) {
		tb.Fatalf("FindRun under the lease: %v, want ErrNotFound", err)
	}
	run, outcome, err := j.Claim(lease, runID, digestOf(runID), Requester{User: "gateway"})
	if err != nil || outcome != BeginNew {
		tb.Fatalf("Claim = %v, %v; want BeginNew", outcome, err)
	}
	events := []struct {
		typ     string
		payload string
	}{
		{"selected", `{"harness":"codex","policy":"default"}`},
		{"partial", `{"delta":"` + strings.Repeat("x", 180) + `"}`},
		{"partial", `{"delta":"` + strings.Repeat("y", 180) + `"}`},
		{"partial", `{"delta":"` + strings.Repeat("z", 180) + `"}`},
	}
	for _, ev := range events {
		if _, err := run.Append(ev.typ, json.RawMessage(ev.payload)); err != nil {
			tb.Fatalf("Append %s: %v", ev.typ, err)
		}
	}
	if err := j.AppendTranscript(session, json.RawMessage(`{"role":"user","text":"hello"}`)); err != nil {
		tb.Fatalf("AppendTranscript: %v", err)
	}
	if err := j.AppendTranscript(session, json.RawMessage(`{"role":"assistant","text":"hi"}`)); err != nil {
		tb.Fatalf("AppendTranscript: %v", err)
	}
	result := json.RawMessage(`{"terminal":"completed","text":"hi"}`)
	if _, err := run.Append("result", result); err != nil {
		tb.Fatalf("Append result: %v", err)
	}
	if err := run.Finish(StateFinished, result); err != nil {
		tb.Fatalf("Finish: %v", err)
	}
	if err := j.SyncTranscript(session); err != nil {
		tb.Fatalf("SyncTranscript: %v", err)
	}
	if err := j.Release(ctx, lease); err != nil {
		tb.Fatalf("Release: %v", err)
	}
}

// BenchmarkTurnFsyncs counts the fsyncs (files and directories) of a short
// turn through the store API, and its wall-clock and CPU time as context:
//
//   - same-session: turn after turn of one session, the steady state;
//   - new-session: every turn a session's first in this process, which
//     also makes the session's directories durable once.
//
// Run it with
//
//	go test -run '^$' -bench TurnFsyncs -benchtime 200x -count=1 ./internal/dispatcher/store/journal/
func BenchmarkTurnFsyncs(b *testing.B) {
	for _, bc := range []struct {
		name       string
		newSession bool
	}{
		{"same-session", false},
		{"new-session", true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var syncs atomic.Int64
			j := open(b, b.TempDir(), Options{MaxRuns: -1, onSync: func(string) { syncs.Add(1) }})
			shortTurn(b, j, sess, "run-warm-up") // sess's directories are made durable here
			syncs.Store(0)
			turns := 0
			b.ReportAllocs()
			cpuBefore, cpuOK := processCPU()
			for b.Loop() {
				session := sess
				if bc.newSession {
					session = "team-a/new-session-" + strconv.Itoa(turns)
				}
				shortTurn(b, j, session, "run-"+strconv.Itoa(turns))
				turns++
			}
			cpuAfter, _ := processCPU()
			b.ReportMetric(float64(syncs.Load())/float64(turns), "fsyncs/turn")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(turns), "µs/turn")
			if cpuOK {
				// The process's CPU (user and system) per turn: what the
				// store costs the dispatcher, less noisy than the wall
				// clock on a shared machine, though the benchmark's
				// own goroutines count too.
				b.ReportMetric(float64((cpuAfter-cpuBefore).Microseconds())/float64(turns), "cpu-µs/turn")
			}
		})
	}
}
