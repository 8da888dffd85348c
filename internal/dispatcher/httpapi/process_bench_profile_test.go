package httpapi_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// profile takes a CPU profile of the dispatcher process (its
// --pprof-bind-address) for seconds while closed loops of turns over
// sessions keep it busy, and writes it to
// $BENCH_OUT/dispatcher-process-<name>-cpu.pprof. Without BENCH_OUT it
// does nothing. hack/bench-profiles.sh compares the two cluster sizes'
// profiles: what a turn pays for the cluster's size is their difference.
func (d *dispatcherProcess) profile(b *testing.B, arm *benchArm, sessions []benchSession, seconds int, name string) {
	b.Helper()
	dir := os.Getenv("BENCH_OUT")
	if dir == "" {
		return
	}
	type fetched struct {
		body []byte
		err  error
	}
	done := make(chan fetched, 1)
	go func() {
		resp, err := http.Get(d.pprof + "profile?seconds=" + strconv.Itoa(seconds))
		if err != nil {
			done <- fetched{err: err}
			return
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET the dispatcher's CPU profile: status %d: %s", resp.StatusCode, body)
		}
		done <- fetched{body, err}
	}()
	for round := 0; ; round++ {
		select {
		case f := <-done:
			benchMust(b, f.err)
			benchMust(b, os.WriteFile(filepath.Join(dir, "dispatcher-process-"+name+"-cpu.pprof"), f.body, 0o644))
			return
		default:
		}
		_, _, err := closedLoop(sessions, 10, fmt.Sprintf("prof-%s-%d", name, round), arm.httpTurn)
		benchMust(b, err)
	}
}

// trace starts a Go execution trace of the dispatcher for d (at least a
// second, at most traceMax) into $BENCH_OUT/dispatcher-open.trace, and
// returns a function that waits for it. Without BENCH_OUT it traces
// nothing. A trace shows where goroutines waited (scheduling, sync,
// syscalls, the network), which a CPU profile cannot: what the open loop's
// tail is made of. hack/bench-profiles.sh writes its summaries.
func (d *dispatcherProcess) trace(b *testing.B, dur time.Duration) func() error {
	b.Helper()
	dir := os.Getenv("BENCH_OUT")
	if dir == "" {
		return func() error { return nil }
	}
	seconds := strconv.Itoa(int(min(max(dur, time.Second), traceMax).Round(time.Second) / time.Second))
	done := make(chan error, 1)
	go func() {
		resp, err := http.Get(d.pprof + "trace?seconds=" + seconds)
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET the dispatcher's execution trace: status %d: %s", resp.StatusCode, body)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "dispatcher-open.trace"), body, 0o644)
		}
		done <- err
	}()
	return func() error { return <-done }
}

// traceMax bounds an execution trace: a busy dispatcher writes megabytes
// a second.
const traceMax = 15 * time.Second
