// Package goroutines reads the runtime's goroutine dump for tests that must
// know where other goroutines are — blocked at a wait, or left behind —
// instead of guessing with a sleep. It has no dependencies, so pure unit
// tests can use it without the envtest helpers of internal/testutil.
package goroutines

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Stacks returns the stack of every goroutine, one string each, as
// runtime.Stack prints them (a header line, then the frames).
func Stacks() []string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(string(buf[:n]), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Running returns the stacks that contain code (a frame) matching substr,
// e.g. "/internal/appserver." for a package's goroutines.
func Running(substr string) []string {
	var out []string
	for _, g := range Stacks() {
		if strings.Contains(g, substr) {
			out = append(out, g)
		}
	}
	return out
}

// BlockedIn counts the goroutines blocked in a select inside fn, a function
// as the dump names it, e.g. "(*Run).Events".
func BlockedIn(fn string) int {
	count := 0
	for _, g := range Stacks() {
		header, frames, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[select") && strings.Contains(frames, fn) {
			count++
		}
	}
	return count
}

// WaitBlocked waits until n goroutines are blocked in a select inside fn:
// proof that they reached that wait, where a sleep would only guess how long
// getting there takes. It fails tb after 10 s.
func WaitBlocked(tb testing.TB, fn string, n int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := BlockedIn(fn)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d goroutines blocked in %s, want %d", got, fn, n)
		}
		time.Sleep(time.Millisecond)
	}
}
