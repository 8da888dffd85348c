package store

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

var (
	// ErrClosed is returned by every operation on a closed Store, and yielded
	// by an Events iterator or returned by an Acquire that was waiting when
	// the Store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrInvalidSession is returned for a session key that is not a valid
	// Kubernetes "namespace/uid".
	ErrInvalidSession = errors.New("store: invalid session key")
	// ErrInvalidRunID is returned for an empty, oversized or non-UTF-8 runId.
	ErrInvalidRunID = errors.New("store: invalid runId")
	// ErrInvalidLease is returned for a lease request without an owner or
	// with a ttl that is not positive, and for a Lease value no Acquire
	// returned (no session, owner or token).
	ErrInvalidLease = errors.New("store: invalid lease")
	// ErrInvalidReservation is returned for a reservation without a server or
	// with a limit below 1.
	ErrInvalidReservation = errors.New("store: invalid capacity reservation")
	// ErrRunConflict is what a *RunConflictError matches with errors.Is: the
	// runId is already recorded for a request with another digest. The
	// dispatcher maps it to RunIdConflict (409).
	ErrRunConflict = errors.New("store: runId reused with a different request")
	// ErrNotFound is returned by FindRun and Post for a run the store does
	// not know (never claimed, aged out of retention, or its session
	// deleted).
	ErrNotFound = errors.New("store: run not found")
	// ErrRunEnded is returned when writing to a run that already ended, and
	// by Post to it.
	ErrRunEnded = errors.New("store: run already ended")
	// ErrNotWriter is returned by Append and Finish on a handle that did not
	// come from a BeginNew outcome.
	ErrNotWriter = errors.New("store: run handle is read-only")
	// ErrFenced is returned when a lease is no longer the session's current
	// grant — another holder acquired the session after it expired, it was
	// released, Recover took it over, or the session was deleted — by Renew
	// and Release of that lease, by Claim under it, and by Append and Finish
	// of a run claimed under it. Nothing was written.
	ErrFenced = errors.New("store: the session's lease is no longer held under this token")
	// ErrSessionBusy is returned by DeleteSession while a run of the session
	// is running or its lease is held and has not expired.
	ErrSessionBusy = errors.New("store: session has a running run or a held lease")
	// ErrInvalidRecord is returned for an event type, payload, result or
	// transcript record the store cannot keep as one JSON value.
	ErrInvalidRecord = errors.New("store: invalid record")
	// ErrTranscriptLimitExceeded is what a *TranscriptLimitError matches with
	// errors.Is. The dispatcher maps it to TranscriptLimitExceeded (413).
	ErrTranscriptLimitExceeded = errors.New("store: transcript limit exceeded")
	// ErrRunPayloadPruned is what a *RunPrunedError matches with errors.Is.
	// The dispatcher maps it to RunPayloadPruned (410).
	ErrRunPayloadPruned = errors.New("store: the run's events and result were pruned")
	// ErrRetentionLimitReached is what a *RetentionLimitError matches with
	// errors.Is. The dispatcher maps it to RetentionLimitReached (429).
	ErrRetentionLimitReached = errors.New("store: the namespace's run limit is reached")
	// ErrInvalidMessage is returned by Post for a message whose kind, key or
	// payload it cannot take; the error names the field.
	ErrInvalidMessage = errors.New("store: invalid inbox message")
	// ErrAlreadyPosted is what an *AlreadyPostedError matches with
	// errors.Is. The dispatcher maps it to RequestAlreadyResolved (409).
	ErrAlreadyPosted = errors.New("store: the run's inbox already holds this answer")
	// ErrAtCapacity is what a *CapacityError matches with errors.Is. The
	// dispatcher answers HarnessAtCapacity when no server has room.
	ErrAtCapacity = errors.New("store: server is at capacity")
)

// RunConflictError reports a runId that Claim found recorded with a different
// request digest. Nothing was recorded or executed for the new request.
type RunConflictError struct {
	Session   string
	RunID     string
	Recorded  [32]byte // digest of the request the runId was first used for
	Requested [32]byte // digest passed to the refused Claim
}

// Error implements error.
func (e *RunConflictError) Error() string {
	return fmt.Sprintf("store: runId %q of session %s is recorded for request sha256:%x…, not sha256:%x…",
		e.RunID, e.Session, e.Recorded[:6], e.Requested[:6])
}

// Unwrap makes errors.Is(err, ErrRunConflict) true.
func (e *RunConflictError) Unwrap() error { return ErrRunConflict }

// TranscriptLimitError reports an AppendTranscript refused because the
// session's transcript would exceed its size limit. The transcript is
// unchanged: none of the call's records was written.
type TranscriptLimitError struct {
	Session string
	Size    int64 // current size of the transcript in bytes
	Adding  int64 // bytes the refused call would have appended
	Limit   int64 // the store's transcript size limit
}

// Error implements error.
func (e *TranscriptLimitError) Error() string {
	return fmt.Sprintf("store: transcript of session %s is full: %d bytes + %d would exceed the limit of %d bytes",
		e.Session, e.Size, e.Adding, e.Limit)
}

// Unwrap makes errors.Is(err, ErrTranscriptLimitExceeded) true.
func (e *TranscriptLimitError) Unwrap() error { return ErrTranscriptLimitExceeded }

// RunPrunedError reports a run of which retention kept only the tombstone:
// it ended (State, FinishedAt), it will never run again, and its events and
// result can no longer be replayed.
type RunPrunedError struct {
	Session    string
	RunID      string
	State      State     // StateFinished or StateFailed
	FinishedAt time.Time // when the run ended
	LastSeq    int64     // its last event's sequence number
	// KeptUntil is when the tombstone ages out and the runId is forgotten;
	// zero without an age limit.
	KeptUntil time.Time
}

// Error implements error.
func (e *RunPrunedError) Error() string {
	msg := fmt.Sprintf("store: run %q of session %s ended %s at %s; its events and result were pruned by the journal's size limits and it is never run again",
		e.RunID, e.Session, e.State, e.FinishedAt.Format(time.RFC3339))
	if !e.KeptUntil.IsZero() {
		msg += fmt.Sprintf(" (its runId stays taken until %s)", e.KeptUntil.Format(time.RFC3339))
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrRunPayloadPruned) true.
func (e *RunPrunedError) Unwrap() error { return ErrRunPayloadPruned }

// RetentionLimitError reports a claim of a new runId refused because its
// namespace holds as many runs as the store's per-namespace bound. Nothing
// was recorded. Runs leave the bound only when they age out or their session
// is deleted: retention never forgets a runId early to make room, so every
// runId the namespace used is still answered (replayed, or refused as
// pruned) and none runs twice.
type RetentionLimitError struct {
	Namespace string
	Runs      int // runs the namespace holds: running, ended and tombstones
	Limit     int // the per-namespace bound
	// RetryAfter is how long until the namespace's oldest ended run ages out
	// (as of the last retention pass); zero when unknown: no age limit, or
	// no run of the namespace had ended then.
	RetryAfter time.Duration
}

// Error implements error.
func (e *RetentionLimitError) Error() string {
	msg := fmt.Sprintf("store: namespace %s holds %d runs in the turn journal, its limit of %d: new runIds are refused until its oldest runs age out of the journal's retention",
		e.Namespace, e.Runs, e.Limit)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(" (the oldest in %s)", e.RetryAfter.Round(time.Second))
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrRetentionLimitReached) true.
func (e *RetentionLimitError) Unwrap() error { return ErrRetentionLimitReached }

// CapacityError reports a Reserve refused because the server already holds
// Limit reservations of other sessions. Nothing was recorded.
type CapacityError struct {
	Server string
	Held   int // sessions holding a reservation on the server
	Limit  int // the limit passed to Reserve
}

// Error implements error.
func (e *CapacityError) Error() string {
	return fmt.Sprintf("store: server %s holds %d session reservations, its limit of %d (maxSessionsPerReplica)", e.Server, e.Held, e.Limit)
}

// Unwrap makes errors.Is(err, ErrAtCapacity) true.
func (e *CapacityError) Unwrap() error { return ErrAtCapacity }

// OutOfSpace reports whether err is a store's write refused because its
// volume is full (ENOSPC) or its quota used up (EDQUOT): nothing the
// request did, and the same request may pass once space is freed.
func OutOfSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
