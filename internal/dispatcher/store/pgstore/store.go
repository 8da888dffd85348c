package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	utilclock "k8s.io/utils/clock"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

var _ store.Store = (*Store)(nil)

// Options are the retention limits and the clock. Limits follow the file
// journal's (journal.Options): zero means the journal's default, negative
// means no limit.
type Options struct {
	MaxRuns            int
	MaxAge             time.Duration
	MaxNamespaceRuns   int
	MaxTranscriptBytes int64
	// Clock is the store's clock for timestamps, the waits of Acquire and
	// retention; nil means the real clock. It does not decide whether a
	// lease has expired: that is the database's clock, shared by every
	// dispatcher on it.
	Clock utilclock.WithTicker
	// LeaseClock stands in for the database's clock in lease expiry: nil
	// (every dispatcher) means the database's statement_timestamp(). Tests
	// that step a fake clock set it to that clock.
	LeaseClock utilclock.PassiveClock
	// MaxInboxMessages bounds the messages of one run's inbox: zero means
	// DefaultMaxInboxMessages, negative no limit.
	MaxInboxMessages int
	// MaxInboxBytes bounds the payload bytes of one run's inbox: zero
	// means DefaultMaxInboxBytes, negative no limit.
	MaxInboxBytes int64

	// tracer, when set, sees every query and batch the Store's connections
	// send: the benchmarks count round trips with it (export_test.go).
	tracer pgx.QueryTracer
}

func (o Options) withDefaults() Options {
	if o.MaxRuns == 0 {
		o.MaxRuns = journal.DefaultMaxRuns
	}
	if o.MaxAge == 0 {
		o.MaxAge = journal.DefaultMaxAge
	}
	if o.MaxNamespaceRuns == 0 {
		o.MaxNamespaceRuns = journal.DefaultMaxNamespaceRuns
	}
	if o.MaxTranscriptBytes == 0 {
		o.MaxTranscriptBytes = journal.DefaultMaxTranscriptBytes
	}
	if o.Clock == nil {
		o.Clock = utilclock.RealClock{}
	}
	if o.MaxInboxMessages == 0 {
		o.MaxInboxMessages = DefaultMaxInboxMessages
	}
	if o.MaxInboxBytes == 0 {
		o.MaxInboxBytes = DefaultMaxInboxBytes
	}
	return o
}

// Store is the PostgreSQL implementation of store.Store. Many Stores, in
// many dispatchers, share one database.
type Store struct {
	opts      Options
	pool      *pgxpool.Pool
	instance  string // this Store's id: runs it writes carry it (RunRef.Recovered)
	hub       *hub
	queues    *queues
	unflushed *unflushed
	group     *groupCommit

	ctx       context.Context // ends at Close: every query runs under it
	cancel    context.CancelFunc
	closed    chan struct{}
	closeOnce sync.Once
	listening chan struct{} // closed when the listener has stopped
}

// Open connects to the database of connString, migrates its schema (under
// an advisory lock) and starts listening for the notifications that wake
// Acquire and Events. connString is a secret: it is never logged, and errors
// name the server, not the password.
func Open(ctx context.Context, connString string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("pgstore: parse the connection string: %w", err)
	}
	if opts.tracer != nil {
		cfg.ConnConfig.Tracer = opts.tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgstore: migrate: %w", err)
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		pool.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Store{
		opts: opts.withDefaults(), pool: pool, instance: hex.EncodeToString(id),
		hub: newHub(), queues: newQueues(), unflushed: newUnflushed(), group: newGroupCommit(),
		ctx: sctx, cancel: cancel, closed: make(chan struct{}), listening: make(chan struct{}),
	}
	conn, err := s.listen(ctx, cfg.ConnConfig)
	if err != nil {
		cancel()
		pool.Close()
		return nil, fmt.Errorf("pgstore: listen: %w", err)
	}
	go s.dispatch(conn, cfg.ConnConfig)
	go s.commitGroups()
	return s, nil
}

// Close ends waiting Acquires and Events iterators with ErrClosed and closes
// the connections. Leases and running runs stay as they are.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		// Readers of other Stores are shown what this one appended.
		close(s.group.stop)
		<-s.group.stopped
		close(s.closed)
		s.cancel()
		<-s.listening
		s.pool.Close()
	})
	return nil
}

func (s *Store) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// check is the start of every operation: ErrClosed once closed.
func (s *Store) check() error {
	if s.isClosed() {
		return store.ErrClosed
	}
	return nil
}

// dbErr maps a failed query: ErrClosed when the Store was closed under it.
func (s *Store) dbErr(what string, err error) error {
	if s.isClosed() {
		return store.ErrClosed
	}
	return fmt.Errorf("pgstore: %s: %w", what, err)
}

// now is the store's clock, at the database's precision (microseconds), so
// that what is returned equals what is stored.
func (s *Store) now() time.Time {
	return s.opts.Clock.Now().UTC().Truncate(time.Microsecond)
}

// leaseNow is the SQL time lease expiry is compared with: the database's
// clock at the statement's start, or the time in parameter n when it is not
// NULL (leaseClock). One clock for every dispatcher: a replica whose own
// clock runs ahead neither takes a live lease nor ends its runs.
func leaseNow(n int) string {
	return fmt.Sprintf("coalesce($%d::timestamptz, statement_timestamp())", n)
}

// leaseClock is the parameter of leaseNow: nil (the database's clock)
// unless Options.LeaseClock is set.
func (s *Store) leaseClock() any {
	if s.opts.LeaseClock == nil {
		return nil
	}
	return s.opts.LeaseClock.Now().UTC().Truncate(time.Microsecond)
}

// tx runs fn in a transaction under the Store's context.
func (s *Store) tx(fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(s.ctx, s.pool, fn)
}

// sessionLock serializes, within a transaction, what claims runs of a
// session or ends them: Claim, Recover and DeleteSession.
const sessionLock = "SELECT pg_advisory_xact_lock(hashtextextended('session:' || $1, 0))"

// errFenced is errors.Is ErrFenced with the session named.
func errFenced(session string) error {
	return fmt.Errorf("%w (session %s)", store.ErrFenced, session)
}

var errNoRows = pgx.ErrNoRows

func isNoRows(err error) bool { return errors.Is(err, errNoRows) }

// Ping checks that the database answers: the dispatcher's readiness check.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.pool.Ping(ctx); err != nil {
		return s.dbErr("ping", err)
	}
	return nil
}
