package httpapi_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// The load BenchmarkDispatcherConcurrency puts on its arms: closed loops,
// open loops, and the order of the arms' blocks.

// timedTurn runs one turn of s with runID through an arm and returns its
// time to the `result` event; the run has ended when it returns (the
// engine may still be releasing the session's lease: a session's next turn
// waits for it, as a gateway's does).
type timedTurn func(s benchSession, runID string) (time.Duration, error)

// directTurn is the direct arm's timedTurn.
func (a *benchArm) directTurn(s benchSession, runID string) (time.Duration, error) {
	t, err := a.turn(s, runID)
	return t.result, err
}

// httpTurn is the HTTP arm's timedTurn.
func (a *benchArm) httpTurn(s benchSession, runID string) (time.Duration, error) {
	t, err := a.post(s, runID)
	return t.result, err
}

// armSample is what one arm measured at one load: each turn's time to
// `result` (ms), and the turns, wall time and CPU of its blocks.
type armSample struct {
	ms    []float64
	wall  time.Duration
	usage cpuUsage
}

func (a *armSample) add(ms []float64, wall time.Duration, usage cpuUsage) {
	a.ms, a.wall, a.usage = append(a.ms, ms...), a.wall+wall, a.usage.plus(usage)
}

// turnsPerSec is the arm's throughput over its blocks.
func (a armSample) turnsPerSec() float64 { return float64(len(a.ms)) / a.wall.Seconds() }

// cpuMsPerTurn is each process's CPU per turn of the arm's blocks.
func (a armSample) cpuMsPerTurn() cpuMs { return a.usage.per(len(a.ms)) }

// Arms of BenchmarkDispatcherConcurrency, as indexes of its pairs.
const (
	directArm = 0
	httpArm   = 1
)

// block is one run of load on arm (directArm or httpArm), its k-th (0 or
// 1); it returns each turn's time (ms) and its wall time.
type block func(arm, k int) ([]float64, time.Duration, error)

// sideBySide runs blocks on the two arms in the order direct, http, http,
// direct (each arm twice, so a drift in the machine's load over the run
// hits both arms alike) and returns what each arm measured.
func sideBySide(run block) ([2]armSample, error) {
	var out [2]armSample
	for i, arm := range []int{directArm, httpArm, httpArm, directArm} {
		before := sampleCPU()
		ms, wall, err := run(arm, i/2)
		if err != nil {
			return out, err
		}
		out[arm].add(ms, wall, sampleCPU().minus(before))
	}
	return out, nil
}

// closedLoop runs perSession turns of each session back to back (a turn
// starts when the session's previous one has settled), all sessions at
// once, and returns each turn's time (ms) and the wall time until the last
// turn ended. runIDs are <session>-<tag>-<i>.
func closedLoop(sessions []benchSession, perSession int, tag string, turn timedTurn) ([]float64, time.Duration, error) {
	ms := make([][]float64, len(sessions))
	errs := make([]error, len(sessions))
	var wg sync.WaitGroup
	start := time.Now()
	for i, s := range sessions {
		wg.Go(func() {
			for j := range perSession {
				d, err := turn(s, fmt.Sprintf("%s-%s-%d", s.name, tag, j))
				if err != nil {
					errs[i] = err
					return
				}
				ms[i] = append(ms[i], float64(d)/float64(time.Millisecond))
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	var all []float64
	for _, m := range ms {
		all = append(all, m...)
	}
	return all, wall, errors.Join(errs...)
}

// openLoop starts n turns at the arrivals of a Poisson process of rate per
// second (exponential gaps drawn from rng), whether or not earlier turns
// have ended: arrival i goes to arm i%2 (so both arms run at once, under the
// same load, each at rate/2) and to that arm's next session in turn. A
// session gets a turn every 2·len(sessions)/rate seconds on average — far
// longer than a turn at the rates it is run at, so a turn does not wait for
// its session's previous one. The CPU used is shared out by turns (both
// arms get the run's average per turn).
func openLoop(sessions [2][]benchSession, turns [2]timedTurn, n int, rate float64, rng *rand.Rand) ([2]armSample, error) {
	ms := make([]float64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	before := sampleCPU()
	start := time.Now()
	next := start
	for i := range n {
		time.Sleep(time.Until(next))
		arm, k := i%2, i/2
		s := sessions[arm][k%len(sessions[arm])]
		wg.Go(func() {
			d, err := turns[arm](s, fmt.Sprintf("%s-open-%d", s.name, k/len(sessions[arm])))
			ms[i], errs[i] = float64(d)/float64(time.Millisecond), err
		})
		next = next.Add(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
	}
	wg.Wait()
	wall, usage := time.Since(start), sampleCPU().minus(before)
	var out [2]armSample
	for i, m := range ms {
		out[i%2].ms = append(out[i%2].ms, m)
	}
	for arm := range out {
		share := float64(len(out[arm].ms)) / float64(n)
		out[arm].wall, out[arm].usage = wall, usage.scaled(share)
	}
	return out, errors.Join(errs...)
}
