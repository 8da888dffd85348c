package journal

import (
	"errors"
	"fmt"
)

var (
	// ErrLocked is returned by Open when another process (or another Journal in
	// this process) holds the directory's lock file.
	ErrLocked = errors.New("journal: directory is locked by another dispatcher")
	// ErrClosed is returned by every operation on a closed Journal, and yielded
	// by an Events iterator that was waiting when the Journal was closed.
	ErrClosed = errors.New("journal: closed")
	// ErrInvalidSession is returned for a session key that is not a valid
	// Kubernetes "namespace/uid".
	ErrInvalidSession = errors.New("journal: invalid session key")
	// ErrLegacyLayout is returned by Open for a journal kept by AgentSession
	// name (its <dir>/sessions directory) when Options.ResolveLegacy is nil.
	ErrLegacyLayout = errors.New("journal: the directory holds a journal keyed by AgentSession name; it must be migrated by a dispatcher that can read AgentSessions")
	// ErrInvalidRunID is returned for an empty, oversized or non-UTF-8 runId.
	ErrInvalidRunID = errors.New("journal: invalid runId")
	// ErrRunConflict is what a *RunConflictError matches with errors.Is: the
	// runId is already recorded for a request with another digest. The
	// dispatcher maps it to RunIdConflict (409).
	ErrRunConflict = errors.New("journal: runId reused with a different request")
	// ErrNotFound is returned by Lookup and MarkFailed for a run the journal
	// does not know (never begun, pruned, or its session deleted).
	ErrNotFound = errors.New("journal: run not found")
	// ErrRunEnded is returned when writing to, or failing, a run that already
	// ended.
	ErrRunEnded = errors.New("journal: run already ended")
	// ErrNotWriter is returned by Append and Finish on a handle that did not
	// come from a BeginNew outcome.
	ErrNotWriter = errors.New("journal: run handle is read-only")
	// ErrSessionBusy is returned by DeleteSession while a run of the session is
	// running; end it (Finish or MarkFailed) first.
	ErrSessionBusy = errors.New("journal: session has a running run")
	// ErrInvalidRecord is returned for an event type, payload, result or
	// transcript record the journal cannot store as one JSON line.
	ErrInvalidRecord = errors.New("journal: invalid record")
	// ErrTranscriptLimitExceeded is what a *TranscriptLimitError matches with
	// errors.Is. The dispatcher maps it to TranscriptLimitExceeded (413).
	ErrTranscriptLimitExceeded = errors.New("journal: transcript limit exceeded")
)

// RunConflictError reports a runId that Begin found recorded with a different
// request digest. Nothing was recorded or executed for the new request.
type RunConflictError struct {
	Session   string
	RunID     string
	Recorded  [32]byte // digest of the request the runId was first used for
	Requested [32]byte // digest passed to the refused Begin
}

// Error implements error.
func (e *RunConflictError) Error() string {
	return fmt.Sprintf("journal: runId %q of session %s is recorded for request sha256:%x…, not sha256:%x…",
		e.RunID, e.Session, e.Recorded[:6], e.Requested[:6])
}

// Unwrap makes errors.Is(err, ErrRunConflict) true.
func (e *RunConflictError) Unwrap() error { return ErrRunConflict }

// TranscriptLimitError reports an AppendTranscript refused because the
// session's transcript would exceed Options.MaxTranscriptBytes. The transcript
// file is unchanged: none of the call's records was written.
type TranscriptLimitError struct {
	Session string
	Size    int64 // current size of the transcript file in bytes
	Adding  int64 // bytes the refused call would have appended
	Limit   int64 // Options.MaxTranscriptBytes
}

// Error implements error.
func (e *TranscriptLimitError) Error() string {
	return fmt.Sprintf("journal: transcript of session %s is full: %d bytes + %d would exceed the limit of %d bytes",
		e.Session, e.Size, e.Adding, e.Limit)
}

// Unwrap makes errors.Is(err, ErrTranscriptLimitExceeded) true.
func (e *TranscriptLimitError) Unwrap() error { return ErrTranscriptLimitExceeded }
