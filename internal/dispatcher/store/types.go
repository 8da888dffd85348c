package store

import (
	"encoding/json"
	"strconv"
	"time"
)

// State is the state of a run.
type State string

// The states of a run. A run starts running and ends exactly once.
const (
	StateRunning  State = "running"
	StateFinished State = "finished"
	StateFailed   State = "failed"
)

// BeginOutcome tells the caller of Claim what to do with the run.
type BeginOutcome int

const (
	// BeginNew: the runId is new and now recorded as running; the caller
	// executes the turn and writes it through the returned handle.
	BeginNew BeginOutcome = iota + 1
	// BeginReplay: the runId already ended (finished or failed) for the same
	// request; the caller replays the recorded events and result and runs
	// nothing.
	BeginReplay
	// BeginAttach: the runId is running for the same request; the caller
	// follows its events (Run.Events) and runs nothing.
	BeginAttach
)

// String implements fmt.Stringer.
func (o BeginOutcome) String() string {
	switch o {
	case BeginNew:
		return "new"
	case BeginReplay:
		return "replay"
	case BeginAttach:
		return "attach"
	}
	return "BeginOutcome(" + strconv.Itoa(int(o)) + ")"
}

// MaxRunIDBytes is the longest runId a Store accepts.
const MaxRunIDBytes = 512

// Event is one recorded event of a run.
type Event struct {
	Seq     int64           `json:"seq"` // 1, 2, … per run; the SSE id
	Type    string          `json:"type"`
	At      time.Time       `json:"at"`
	Payload json.RawMessage `json:"payload,omitempty"` // compact JSON, or nil
}

// Requester is who asked for a run: the authenticated user of the request
// that started it. It is empty for a run begun without one (in-process
// callers, runs journaled before requesters were recorded).
type Requester struct {
	User   string   `json:"user,omitempty"`
	UID    string   `json:"uid,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// RunRef names a run.
type RunRef struct {
	Session   string
	RunID     string
	StartedAt time.Time
	// Requester is who asked for the run (Claim's).
	Requester Requester
	// Recovered is true for a run found running when the Store was opened:
	// no handle of this Store writes it, and it stays running until
	// Recover ends it.
	Recovered bool
}

// RunInfo is a snapshot of a run.
type RunInfo struct {
	RunRef
	Digest     [32]byte
	State      State
	LastSeq    int64           // sequence number of the last event; 0 when none
	FinishedAt time.Time       // zero while running
	Result     json.RawMessage // the result given to Finish; nil while running and for a run Recover ended
	Reason     string          // why Recover ended the run
}

// PruneReport says what one retention pass did.
type PruneReport struct {
	// Forgotten counts runs removed with their tombstones: they ended more
	// than the retention's maximum age ago, and their runIds are free again.
	Forgotten int
	// PayloadsPruned counts ended runs reduced to their tombstones by the
	// count and per-namespace byte limits.
	PayloadsPruned int
	// TranscriptsPruned counts transcripts of idle sessions replaced by a
	// "pruned" marker (the per-namespace byte limit).
	TranscriptsPruned int
}

// NamespaceUsage is what one namespace's sessions hold in the store, as the
// per-namespace run bound and byte cap count it.
type NamespaceUsage struct {
	Runs int // runs: running, ended and tombstones
	// Bytes is the size of the runs that keep their payload (running runs
	// included) and of the transcripts; tombstones do not count.
	Bytes int64
}
