package testutil

import (
	"os"
	"testing"
	"time"
)

// CPUTime grows with the CPU a process burns, and Memory reads a resident
// set that is never above its peak — what a benchmark divides and reports.
func TestProcStatOfThisProcess(t *testing.T) {
	before, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sink := 0
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		sink++
	}
	after, err := CPUTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < 50*time.Millisecond {
		t.Errorf("CPUTime grew by %s over 200 ms of spinning (%d loops)", after-before, sink)
	}
	rss, peak, err := Memory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || peak < rss {
		t.Errorf("Memory: VmRSS %d, VmHWM %d; want 0 < VmRSS ≤ VmHWM", rss, peak)
	}
	if _, err := CPUTime(-1); err == nil {
		t.Error("CPUTime of no process: no error")
	}
}
