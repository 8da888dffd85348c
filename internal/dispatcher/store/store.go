package store

import (
	"context"
	"encoding/json"
	"io"
	"iter"
	"time"
)

// Store is the dispatcher's storage below the turn engine: runs and their
// events, per-session leases, transcripts, capacity reservations and
// retention. Its methods are safe for concurrent use, by goroutines of one
// process and by dispatchers sharing one storage: every promise below holds
// for all users of one storage, not only for one Store value.
//
// Sessions are keyed "namespace/uid" (a DNS-1123 label and a DNS-1123
// subdomain): the UID is the AgentSession's identity, so a session deleted
// and created again under its name starts empty. Any other key is refused
// with ErrInvalidSession.
type Store interface {
	// --- Runs ---

	// Claim records runID of lease.Session as running for the request with
	// this digest, or reports what is already recorded for it: BeginNew
	// (the caller runs the turn and writes it through the returned handle),
	// BeginReplay (ended for the same digest) or BeginAttach (running for
	// the same digest); the handles of the last two are read-only. A runId
	// is claimed at most once per session for the whole retention: every
	// other Claim of it — concurrent, later, after a restart, through
	// another Store on the same storage — gets BeginReplay or BeginAttach
	// for the same digest, a *RunConflictError (ErrRunConflict) for
	// another, a *RunPrunedError once retention kept only its tombstone.
	// A new runId in a namespace at the retention's run bound is refused
	// with a *RetentionLimitError. Nothing is recorded when Claim fails.
	// BeginNew returns only once the claim is durable.
	//
	// Claim requires lease to be the session's current grant (ErrFenced
	// otherwise) and binds the BeginNew handle to it: its Append and Finish
	// succeed only while lease is still the session's current grant.
	Claim(lease Lease, runID string, digest [32]byte, by Requester) (Run, BeginOutcome, error)
	// FindRun returns a read-only handle on a known run (for a reader that
	// has the runId and an event id to resume after), ErrNotFound, or a
	// *RunPrunedError for a run of which only the tombstone is kept. The
	// caller compares Info().Digest with its request's digest.
	FindRun(session, runID string) (Run, error)
	// Recover is start-up recovery for owner. It releases every lease held
	// by owner — at start-up they are its previous process's — and ends as
	// failed, with reason and without a result, every running run whose
	// session's lease is held by owner or not held (expired, released or
	// never granted), releasing that lease too so its holder is fenced.
	// Runs under a lease another owner holds and that has not expired are
	// left alone: their owner is alive, or they are recoverable once the
	// lease expires. It returns the runs it ended, sorted by session and
	// runId; iterators following them see them end. Each session's check
	// and takeover is one atomic step, so a holder that renews at the same
	// time either keeps its run or is fenced, never both. Call it before
	// owner acquires any lease.
	Recover(ctx context.Context, owner, reason string) ([]RunRef, error)
	// Sweep is the takeover of runs whose dispatcher died, by the live
	// ones, called periodically while they serve. It ends as failed, with
	// reason and without a result, every running run whose session's lease
	// has expired or is not held — its holder stopped renewing, or let the
	// lease go without ending the run — and releases that lease so its
	// holder is fenced. Unlike Recover it touches no unexpired lease, the
	// caller's own included, and no session without a running run. It
	// returns the runs it ended, sorted by session and runId — none when
	// nothing expired since the last Sweep; iterators following them see
	// them end. Each session's check and takeover is one atomic step, as
	// Recover's: a holder that renews at the same time either keeps its run
	// or is fenced, never both. A turn whose dispatcher died is ended
	// within its lease's ttl plus the interval between Sweeps.
	Sweep(ctx context.Context, reason string) ([]RunRef, error)

	// --- Inbox ---

	// Post delivers m to the inbox of the running run runID of session, for
	// the dispatcher that owns the turn, whichever dispatcher on the
	// storage it is posted through, and returns its Seq (1, 2, … per run).
	// m.Kind and m.Key name what it answers: a second Post of the same kind
	// and key to the run is refused with an *AlreadyPostedError
	// (ErrAlreadyPosted). NormalizeInbox says what m must be
	// (ErrInvalidMessage). A run that ended is refused with ErrRunEnded,
	// an unknown one with ErrNotFound; nothing is recorded when Post fails.
	// Post is not fenced — the poster holds no lease, and its answer is for
	// whichever grant runs the turn — but it is atomic against the run's
	// end: it either returns before the run ended, and every Inbox of the
	// run yields the message, or fails with ErrRunEnded. A message lives as
	// long as its run runs: once Post returned, it reaches the owner
	// through any Store on the storage, even if the poster's process ends;
	// it goes with its run (retention, DeleteSession), and a restart of the
	// owner ends its runs (Recover, Sweep), so the file store, one process
	// per directory, keeps inboxes in memory.
	Post(session, runID string, m InboxMessage) (int64, error)
	// Inbox iterates over the messages posted to the run ref names (its
	// Session and RunID) with Seq > afterSeq, in order: first those posted,
	// then, while the run is running, each new one as it is posted through
	// any Store on the storage — woken by the Post, never by polling; it
	// ends when the run has ended and every message posted before the end
	// was yielded. A run that had ended when Inbox was called yields
	// nothing: the inbox is the running turn's. It yields
	// (InboxMessage{}, err) and stops when ctx is done (ctx.Err()), the
	// Store is closed (ErrClosed), or the run is unknown (ErrNotFound).
	Inbox(ctx context.Context, ref RunRef, afterSeq int64) iter.Seq2[InboxMessage, error]

	// --- Leases ---

	// Acquire grants the session's lease to owner for ttl and returns it.
	// While the lease is held by anyone — another owner, or another
	// Acquire of the same owner — it waits, without polling, until the
	// lease is released or expires (the store's clock), or until ctx ends
	// (ctx.Err()) or the Store is closed (ErrClosed). Waiters of one Store
	// are granted in the order they started waiting. Every grant's Token is
	// greater than every earlier grant's of the session, across restarts
	// and DeleteSession: it is the fencing token that Claim and the run's
	// writes are checked against.
	Acquire(ctx context.Context, session, owner string, ttl time.Duration) (Lease, error)
	// Renew extends lease to ttl from now and returns it with its new
	// Expires. A lease that expired is renewed as long as nobody acquired
	// the session since; otherwise, and after Release or Recover, Renew
	// fails with ErrFenced: the holder must stop writing.
	Renew(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error)
	// Release frees the lease and wakes the session's next waiter. Writes
	// under it are fenced from then on. Releasing a lease that is no longer
	// the current grant changes nothing and returns ErrFenced. When the
	// storage refuses the release's write (a full disk), the lease is free
	// for this Store all the same and the error is returned; the stored
	// grant then lasts until it expires.
	Release(ctx context.Context, lease Lease) error
	// Holds reports whether the grant whose fencing token is token is the
	// session's current grant (Lease says until when a grant is current):
	// true from Acquire until Release, a takeover (Acquire after the grant
	// expired, Recover, Sweep) or DeleteSession; false for any other token
	// and for a session without a lease. Expiry alone does not end it, as
	// for writes. The token alone names the grant: no two grants of a
	// session share one. Holds changes nothing and waits for nothing, so a
	// service that is not the holder may ask it on every request: the
	// model gateway accepts a turn's credential only while the grant it
	// was minted under holds. A session key that is not valid fails with
	// ErrInvalidSession, a token that is not positive with ErrInvalidLease.
	Holds(ctx context.Context, session string, token int64) (bool, error)

	// --- Transcripts ---

	// AppendTranscript appends records, each a JSON object, to the
	// session's transcript mirror, all or nothing, stored compacted. When
	// they would take the transcript past the store's size limit it fails
	// with a *TranscriptLimitError and the transcript is unchanged. Appends
	// may be buffered until SyncTranscript. Transcript writes are not
	// fenced: the caller writes only while it holds the session's lease.
	AppendTranscript(session string, records ...json.RawMessage) error
	// ResetTranscript replaces the session's transcript by the marker
	// {"type":"reset","generation":N,"at":"…"}, for a new native thread.
	ResetTranscript(session string, generation int64) error
	// TranscriptFull reports whether an append to the session's transcript
	// was refused for the size limit since its last reset or prune.
	TranscriptFull(session string) (bool, error)
	// SyncTranscript makes the session's appended records durable; the
	// engine calls it once per turn, before reporting the result.
	SyncTranscript(session string) error
	// ReadTranscript streams the session's transcript, complete JSON lines
	// as appended, to w and returns the bytes written. It copies what was
	// appended when it started, never holding all of it in memory, and does
	// not hold up appends while w is slow. A session without a transcript
	// gives 0 bytes.
	ReadTranscript(session string, w io.Writer) (int64, error)
	// TranscriptSize returns the size in bytes of the session's transcript.
	TranscriptSize(session string) (int64, error)

	// --- Capacity ---

	// Reserve records that session occupies a place on server (an app-server
	// pod: the caller names it, e.g. "namespace/pod") so that at most limit
	// sessions do. It succeeds when session already holds a reservation on
	// server (idempotent, whatever the count now) or fewer than limit
	// sessions hold one; otherwise it fails with a *CapacityError
	// (ErrAtCapacity) and records nothing. The check and the record are one
	// atomic step: concurrent Reserves never take a server past limit.
	// Reservations are durable and last until Unreserve or DeleteSession.
	Reserve(ctx context.Context, server, session string, limit int) error
	// Unreserve removes session's reservation on server; removing one that
	// does not exist is not an error.
	Unreserve(ctx context.Context, server, session string) error
	// Reserved returns how many sessions hold a reservation on server.
	Reserved(ctx context.Context, server string) (int, error)

	// --- Sessions and retention ---

	// Sessions lists the keys of the sessions the store may hold anything
	// for — every session with runs, a transcript, a lease or reservations
	// is among them — for garbage collection of sessions that no longer
	// exist.
	Sessions() ([]string, error)
	// DeleteSession removes every run (tombstones included), the
	// transcript, the lease and the reservations of a session; its runs no
	// longer count against the namespace's run bound. It fails with
	// ErrSessionBusy while a run of the session is running or its lease is
	// held and has not expired. Deleting a session the store holds nothing
	// for is not an error.
	DeleteSession(session string) error
	// Admit returns the *RetentionLimitError that Claim would refuse a new
	// runId of session with now, or nil: a check before the engine selects
	// a harness and connects. Claim checks again.
	Admit(session string) error
	// Prune applies retention once: runs that ended longer ago than the
	// maximum age are forgotten (only then is a runId free again); beyond
	// the count and byte limits, the oldest ended runs keep only their
	// tombstone (FindRun and Claim answer *RunPrunedError) and idle
	// sessions' transcripts are pruned. Running runs are never pruned.
	Prune() (PruneReport, error)
	// RunRetention prunes every interval until ctx ends or the Store is
	// closed, handing each pass's outcome to report (may be nil).
	RunRetention(ctx context.Context, interval time.Duration, report func(PruneReport, error)) error
	// Usage returns what each namespace holds, as the retention limits
	// count it.
	Usage() (map[string]NamespaceUsage, error)

	// Close releases the Store's resources: waiting Acquires and Events
	// iterators end with ErrClosed, and further calls fail with ErrClosed.
	// Leases stay as they are (held until they expire), and running runs
	// stay running, as after a crash. Close is idempotent.
	Close() error
}

// Run is a handle on one run. A handle from a BeginNew outcome writes
// (Append, Finish); every handle reads (Events, Info, Done). Safe for
// concurrent use.
type Run interface {
	// Ref names the run.
	Ref() RunRef
	// Info returns a snapshot of the run.
	Info() RunInfo
	// Done returns a channel closed when the run has ended.
	Done() <-chan struct{}
	// Append records one event and returns its sequence number, one more
	// than the previous event's (the first is 1). typ must match
	// [A-Za-z0-9_.:/-]{1,64}; payload must be valid JSON or empty, and is
	// stored compacted. It is published to every Events iterator; Append
	// never waits for readers. It fails with ErrNotWriter on a read-only
	// handle, ErrRunEnded once the run ended, and ErrFenced once the lease
	// the run was claimed under is no longer the session's current grant.
	Append(typ string, payload json.RawMessage) (int64, error)
	// Finish ends the run with StateFinished or StateFailed and its result
	// (valid JSON or empty), makes the run durable and wakes every Events
	// iterator. Errors as for Append. When the storage refuses the end's
	// write (a full disk), or refused the run's last Append, the run still
	// ends for this Store's readers — its state and result, and that last
	// event with its sequence number, kept in memory, not durable — and
	// Finish returns the write's error; the storage keeps the run running
	// until Recover ends it failed, outcome unknown, after a restart.
	Finish(state State, result json.RawMessage) error
	// Events iterates over the run's events with Seq > afterSeq, in order:
	// first those recorded, then, while the run is running, each new one as
	// it is appended — woken by the append, never by polling; it ends when
	// the run has ended and every event was yielded. It yields (Event{},
	// err) and stops when ctx is done (ctx.Err()) or the Store is closed
	// (ErrClosed), and when the run's events can no longer be read: a
	// *RunPrunedError when retention pruned the ended run's payload before
	// the iteration started (an iteration that started reads on),
	// ErrNotFound when the run was forgotten or its session deleted. A slow
	// reader falls behind and loses nothing; it never holds up Append, and
	// it never makes the store hold more of the run in memory than a
	// bounded tail of its latest events: what it has not read yet is read
	// from storage.
	Events(ctx context.Context, afterSeq int64) iter.Seq2[Event, error]
}

// Lease is one grant of a session's lease: the right to run the session's
// next turn, held by Owner until Expires unless renewed.
//
// A grant is the session's current grant until it is released (Release,
// Recover), the session is acquired again after the grant expired, or the
// session is deleted. Expiry alone does not end it: a holder that was slow
// to renew keeps writing as long as nobody took the session over — the
// fencing token, not the clock, decides which writes are accepted.
type Lease struct {
	Session string
	// Owner identifies the holder: a dispatcher replica, stable across its
	// process's restarts (its pod name), so that Recover finds what its
	// previous process left.
	Owner string
	// Token is the fencing token: greater than the token of every earlier
	// grant of the session. Writes carry it and are refused once a later
	// grant exists.
	Token int64
	// Expires is when the grant lapses unless renewed: from then on another
	// Acquire may take the session over.
	Expires time.Time
}
