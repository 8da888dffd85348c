package turnload

import (
	"fmt"
	"sort"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Campaign is what the load saw across the campaign's two faults: the turns
// ended by the end of the rolling restart, every turn at the end, and the
// turns running on the replica that was killed.
type Campaign struct {
	AfterRestart map[string]Outcome
	All          map[string]Outcome
	Doomed       map[string]bool
	Sent         int64
	// Executions is how many model requests carried the turn's Marker.
	Executions func(runID string) int
}

// Verdict is the campaign's figures and every violation of its promises.
type Verdict struct {
	Turns, FailedDoomed int
	Violations          []string
}

// Judge checks the campaign's promises: a rolling restart fails no turn; a
// kill fails exactly the killed replica's running turns, with replaySafe
// false (some may have finished just before the signal) and nothing else;
// no turn is lost (sent and never ended) and none ran twice.
func Judge(c Campaign) Verdict {
	v := Verdict{Turns: len(c.All)}
	for _, id := range sorted(c.AfterRestart) {
		if o := c.AfterRestart[id]; !o.OK {
			v.Violations = append(v.Violations, fmt.Sprintf("rolling restart: turn %s failed: %+v", id, o))
		}
	}
	for _, id := range sorted(c.All) {
		o := c.All[id]
		switch {
		case o.OK:
		case c.Doomed[id] && o.Code == string(wire.CodeHarnessUnavailable) && !o.ReplaySafe:
			v.FailedDoomed++
		default:
			v.Violations = append(v.Violations, fmt.Sprintf("turn %s ended %+v (running on the killed replica: %v)", id, o, c.Doomed[id]))
		}
		if n := c.Executions(id); n > 1 || (o.OK && n != 1) {
			v.Violations = append(v.Violations, fmt.Sprintf("turn %s (ok %v, code %q) reached the model %d times", id, o.OK, o.Code, n))
		}
	}
	if len(c.Doomed) > 0 && v.FailedDoomed == 0 {
		v.Violations = append(v.Violations, fmt.Sprintf("no turn of the killed replica failed: %d were running on it", len(c.Doomed)))
	}
	if lost := c.Sent - int64(len(c.All)); lost != 0 {
		v.Violations = append(v.Violations, fmt.Sprintf("%d turns were sent and never ended", lost))
	}
	return v
}

func sorted(m map[string]Outcome) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
