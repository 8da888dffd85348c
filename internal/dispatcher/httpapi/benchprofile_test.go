package httpapi_test

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"
)

// profileBlocks is how many closed-loop blocks the profiled loop lasts:
// enough samples for its top 10 to be stable.
const profileBlocks = 3

// profile runs the HTTP arm's closed loop at c sessions once more (as long
// as profileBlocks blocks), with Go's
// CPU profiler on and the allocation profile written before and after, into
// dir: dispatcher-cpu.pprof, dispatcher-alloc-base.pprof and
// dispatcher-alloc.pprof (`go tool pprof -sample_index=alloc_space -base
// dispatcher-alloc-base.pprof dispatcher-alloc.pprof` is the loop's
// allocations). The profiles are of this process: the engine and the
// Handler, and also the benchmark's HTTP client and the app-server double.
func (lt loadTest) profile(b *testing.B, dir string, sessions [2][]benchSession, c int) *profileFigures {
	benchMust(b, os.MkdirAll(dir, 0o755))
	create := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		benchMust(b, err)
		return f
	}
	writeAllocs := func(name string) {
		f := create(name)
		runtime.GC() // the allocation profile is as of the last collection
		benchMust(b, errors.Join(pprof.Lookup("allocs").WriteTo(f, 0), f.Close()))
	}
	writeAllocs("dispatcher-alloc-base.pprof")
	cpu := create("dispatcher-cpu.pprof")
	benchMust(b, pprof.StartCPUProfile(cpu))
	before := sampleCPU()
	ms, wall, err := closedLoop(sessions[httpArm][:c], profileBlocks*perBlock(c, false), "profile", lt.turns[httpArm])
	usage := sampleCPU().minus(before)
	pprof.StopCPUProfile()
	benchMust(b, errors.Join(err, cpu.Close()))
	writeAllocs("dispatcher-alloc.pprof")
	return &profileFigures{Concurrency: c, Turns: len(ms), TurnsPerSec: float64(len(ms)) / wall.Seconds(),
		CPUPerTurn: usage.per(len(ms))}
}
