package journal

import "github.com/openclaw/harness-operator/internal/dispatcher/store"

// The Journal is the file implementation of store.Store: the contract's
// vocabulary is store's, and the journal's names below are aliases of it, so
// callers of either package see the same types and errors.
var _ store.Store = (*Journal)(nil)

// Types of the store contract.
type (
	State                = store.State
	BeginOutcome         = store.BeginOutcome
	Event                = store.Event
	RunRef               = store.RunRef
	Requester            = store.Requester
	RunInfo              = store.RunInfo
	PruneReport          = store.PruneReport
	NamespaceUsage       = store.NamespaceUsage
	RunConflictError     = store.RunConflictError
	TranscriptLimitError = store.TranscriptLimitError
	RunPrunedError       = store.RunPrunedError
	RetentionLimitError  = store.RetentionLimitError
)

// States and Begin outcomes of the store contract.
const (
	StateRunning  = store.StateRunning
	StateFinished = store.StateFinished
	StateFailed   = store.StateFailed

	BeginNew    = store.BeginNew
	BeginReplay = store.BeginReplay
	BeginAttach = store.BeginAttach
)

// Errors of the store contract (store's documentation says when each is
// returned; the journal's Lookup, MarkFailed and Begin return them as Store's
// FindRun, Recover and Claim do).
var (
	ErrClosed                  = store.ErrClosed
	ErrInvalidSession          = store.ErrInvalidSession
	ErrInvalidRunID            = store.ErrInvalidRunID
	ErrRunConflict             = store.ErrRunConflict
	ErrNotFound                = store.ErrNotFound
	ErrRunEnded                = store.ErrRunEnded
	ErrNotWriter               = store.ErrNotWriter
	ErrSessionBusy             = store.ErrSessionBusy
	ErrInvalidRecord           = store.ErrInvalidRecord
	ErrTranscriptLimitExceeded = store.ErrTranscriptLimitExceeded
	ErrRunPayloadPruned        = store.ErrRunPayloadPruned
	ErrRetentionLimitReached   = store.ErrRetentionLimitReached
)
