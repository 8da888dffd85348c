//go:build postgres

package pgstore

import "github.com/jackc/pgx/v5"

// MigrationLock is the advisory lock key migrate takes, for the tests that
// hold it themselves or watch who holds it and who waits for it.
const MigrationLock = migrationLock

// MigrationNames are the embedded migrations' file names in version order:
// version i+1 is the i-th.
func MigrationNames() ([]string, error) {
	all, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, m := range all {
		names[i] = m.name
	}
	return names, nil
}

// WithTracer is opts with a tracer that sees every query and batch the
// Store's connections send.
func WithTracer(opts Options, tracer pgx.QueryTracer) Options {
	opts.tracer = tracer
	return opts
}

// HoldsStatement is Holds' statement: $1 the session, $2 the token.
const HoldsStatement = holdsQuery

// GroupCommitStatement is the statement of a group commit's round.
const GroupCommitStatement = flushDurable

// PauseGroupCommit holds the Store's group commit rounds until resume is
// called: appends stay unflushed, and readers are not shown them.
func PauseGroupCommit(st *Store) (resume func()) {
	g := st.group
	g.mu.Lock()
	g.paused = true
	g.mu.Unlock()
	return func() {
		g.mu.Lock()
		g.paused = false
		g.mu.Unlock()
		g.wake()
	}
}
