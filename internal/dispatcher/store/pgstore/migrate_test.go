//go:build postgres

package pgstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

// TestDispatchersStartingTogetherMigrateOnce: while the migration lock is
// held — here by the test's own session, standing for a dispatcher that is
// migrating — replicas that start on the empty database all wait for it in
// pg_advisory_lock (pg_locks shows each one's request not granted) and
// migrate nothing; once it is released they all start, and the schema is
// migrated once: each version recorded once, no replica failing on what
// another created.
func TestDispatchersStartingTogetherMigrateOnce(t *testing.T) {
	const replicas = 4
	db := pgtest.Shared(t).NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), awaitFor)
	defer cancel()
	obs := connect(ctx, t, db)
	m := newMigrators(t, db, replicas) // its cleanup runs after the holder's
	holder := connect(ctx, t, db)      // closed at the end: lock released
	holderPID := int(holder.PgConn().PID())

	if _, err := holder.Exec(ctx, "SELECT pg_advisory_lock($1)", pgstore.MigrationLock); err != nil {
		t.Fatalf("take the migration lock: %v", err)
	}
	m.await(ctx, obs, "pg_locks to show the test's session holding the migration lock", nil,
		func(bs []backend) (bool, string) {
			return slices.ContainsFunc(bs, func(b backend) bool { return b.pid == holderPID && b.holdsLock }), ""
		})
	for range replicas {
		m.start(ctx)
	}
	m.await(ctx, obs, fmt.Sprintf("all %d replicas to wait for the migration lock", replicas), []int{holderPID},
		func(bs []backend) (bool, string) {
			waiting := 0
			for _, b := range bs {
				switch {
				case b.holdsLock:
					return false, fmt.Sprintf("%v holds the migration lock the test holds", b)
				case b.waitsLock && b.wait == "Lock:advisory":
					waiting++
				}
			}
			return waiting == replicas, ""
		})
	m.noneReturned("while the test held the migration lock")
	var created bool
	if err := obs.QueryRow(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&created); err != nil {
		t.Fatalf("look for schema_migrations: %v", err)
	}
	if created {
		t.Fatal("schema_migrations exists while every replica waits for the migration lock: something migrated without it")
	}

	var released bool
	if err := holder.QueryRow(ctx, "SELECT pg_advisory_unlock($1)", pgstore.MigrationLock).Scan(&released); err != nil || !released {
		t.Fatalf("release the migration lock: %t, %v", released, err)
	}
	m.wait()
	checkMigratedOnce(ctx, t, obs)
}

// TestMigrationHoldsTheLockUntilItsMigrationsCommit: a dispatcher that is
// migrating holds the migration lock until it has finished, and one that
// starts meanwhile waits for that lock, migrating nothing, and then finds the
// schema applied. The test holds the first one mid-migration: its own
// transaction creates schema_migrations and stays open, so the first
// migrator's CREATE TABLE waits for that transaction (pg_stat_activity:
// Lock:transactionid) while holding the migration lock (pg_locks); the
// second must then wait for the migration lock (Lock:advisory, not granted),
// not reach the CREATE TABLE. Rolling the transaction back lets both finish.
func TestMigrationHoldsTheLockUntilItsMigrationsCommit(t *testing.T) {
	db := pgtest.Shared(t).NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), awaitFor)
	defer cancel()
	obs := connect(ctx, t, db)
	m := newMigrators(t, db, 2)   // its cleanup runs after the holder's
	holder := connect(ctx, t, db) // closed at the end: transaction rolled back
	holderPID := int(holder.PgConn().PID())

	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if _, err := tx.Exec(ctx, "CREATE TABLE schema_migrations (version int)"); err != nil {
		t.Fatalf("create schema_migrations uncommitted: %v", err)
	}

	m.start(ctx)
	firstPID := 0
	m.await(ctx, obs, "the first migrator to hold the migration lock while its CREATE TABLE waits for the test's transaction", []int{holderPID},
		func(bs []backend) (bool, string) {
			for _, b := range bs {
				if b.wait == "Lock:transactionid" {
					if !b.holdsLock {
						return false, fmt.Sprintf("%v migrates without holding the migration lock", b)
					}
					firstPID = b.pid
					return true, ""
				}
			}
			return false, ""
		})

	m.start(ctx)
	m.await(ctx, obs, "the second migrator to wait for the migration lock the first holds", []int{holderPID},
		func(bs []backend) (bool, string) {
			waiting := false
			for _, b := range bs {
				switch {
				case b.pid == firstPID:
					if !b.holdsLock || b.wait != "Lock:transactionid" {
						return false, fmt.Sprintf("the first migrator, %v, no longer holds the migration lock mid-migration", b)
					}
				case b.holdsLock:
					return false, fmt.Sprintf("%v holds the migration lock the first migrator holds", b)
				case b.wait == "Lock:transactionid":
					return false, fmt.Sprintf("%v got past the migration lock the first migrator holds", b)
				case b.waitsLock && b.wait == "Lock:advisory":
					waiting = true
				}
			}
			return waiting, ""
		})
	m.noneReturned("while the first migrator held the migration lock")

	if err := tx.Rollback(ctx); err != nil {
		t.Fatalf("roll back: %v", err)
	}
	m.wait()
	checkMigratedOnce(ctx, t, obs)
}

// awaitFor bounds a test's waiting for what it expects to observe; it is
// reached only when that never happens.
const awaitFor = 2 * time.Minute

// pollEvery is how often await re-reads pg_stat_activity and pg_locks: the
// interval between reads of an observable, not an ordering.
const pollEvery = 5 * time.Millisecond

func connect(ctx context.Context, t *testing.T, db string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// backend is one client session of the test's database as pg_stat_activity
// and pg_locks show it.
type backend struct {
	pid       int
	wait      string // wait_event_type:wait_event; "" when not waiting
	holdsLock bool   // holds the migration lock
	waitsLock bool   // has asked for the migration lock and waits for it
}

func (b backend) String() string {
	return fmt.Sprintf("session %d (wait %q, holds the migration lock %t, waits for it %t)", b.pid, b.wait, b.holdsLock, b.waitsLock)
}

// backends are the client sessions of obs's database other than obs's own
// and the excluded ones. PostgreSQL shows an advisory lock on a bigint key
// as classid (its high 32 bits), objid (its low 32 bits) and objsubid 1.
// Each query is its own transaction, so pg_stat_activity is read afresh.
func backends(ctx context.Context, obs *pgx.Conn, exclude []int) ([]backend, error) {
	key := uint64(pgstore.MigrationLock)
	rows, err := obs.Query(ctx, `
		SELECT a.pid, coalesce(a.wait_event_type || ':' || a.wait_event, ''),
			coalesce(bool_or(l.granted), false), coalesce(bool_or(NOT l.granted), false)
		FROM pg_stat_activity a
		LEFT JOIN pg_locks l ON l.pid = a.pid AND l.locktype = 'advisory' AND l.database = a.datid
			AND l.classid::int8 = $1 AND l.objid::int8 = $2 AND l.objsubid = 1
		WHERE a.datname = current_database() AND a.backend_type = 'client backend'
			AND a.pid <> pg_backend_pid()
		GROUP BY a.pid, a.wait_event_type, a.wait_event
		ORDER BY a.pid`, int64(key>>32), int64(key&0xffffffff))
	if err != nil {
		return nil, err
	}
	bs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (backend, error) {
		var b backend
		err := row.Scan(&b.pid, &b.wait, &b.holdsLock, &b.waitsLock)
		return b, err
	})
	return slices.DeleteFunc(bs, func(b backend) bool { return slices.Contains(exclude, b.pid) }), err
}

// opened is what one migrator's Open returned.
type opened struct {
	st  *pgstore.Store
	err error
}

// migrators are pgstore.Opens of one database, each in a goroutine of its
// own, which the test watches through the database.
type migrators struct {
	t       *testing.T
	db      string
	results chan opened
	running int
}

// newMigrators makes room for up to n migrators. Its cleanup waits for those
// still running and closes their stores: register whatever blocks them
// afterwards, so that it is released first.
func newMigrators(t *testing.T, db string, n int) *migrators {
	m := &migrators{t: t, db: db, results: make(chan opened, n)}
	t.Cleanup(func() {
		for ; m.running > 0; m.running-- {
			if r := <-m.results; r.st != nil {
				_ = r.st.Close()
			}
		}
	})
	return m
}

func (m *migrators) start(ctx context.Context) {
	m.running++
	go func() {
		st, err := pgstore.Open(ctx, m.db, pgstore.Options{})
		m.results <- opened{st, err}
	}()
}

// await re-reads the database's sessions (but those excluded) until check
// says that what the test waits for is there. It fails the test when check
// names a state that rules it out, when a migrator returns meanwhile (they
// are all to be waiting), or when ctx ends first.
func (m *migrators) await(ctx context.Context, obs *pgx.Conn, what string, exclude []int, check func([]backend) (ok bool, bad string)) {
	m.t.Helper()
	for {
		bs, err := backends(ctx, obs, exclude)
		if err != nil {
			m.t.Fatalf("waiting for %s: read pg_stat_activity and pg_locks: %v", what, err)
		}
		ok, bad := check(bs)
		if bad != "" {
			m.t.Fatalf("waiting for %s: %s; sessions: %v", what, bad, bs)
		}
		if ok {
			return
		}
		select {
		case r := <-m.results:
			m.running--
			if r.st != nil {
				_ = r.st.Close()
			}
			m.t.Fatalf("waiting for %s: a migrator's Open returned (error: %v) instead of waiting for the migration lock; sessions: %v", what, r.err, bs)
		case <-ctx.Done():
			m.t.Fatalf("waiting for %s: not seen within %v; sessions: %v", what, awaitFor, bs)
		case <-time.After(pollEvery):
		}
	}
}

// noneReturned fails the test if a migrator has returned.
func (m *migrators) noneReturned(when string) {
	m.t.Helper()
	select {
	case r := <-m.results:
		m.running--
		if r.st != nil {
			_ = r.st.Close()
		}
		m.t.Fatalf("a migrator's Open returned (error: %v) %s", r.err, when)
	default:
	}
}

// wait waits for every migrator and fails the test unless each Open
// succeeded; it closes their stores.
func (m *migrators) wait() {
	m.t.Helper()
	for i := 0; m.running > 0; i++ {
		r := <-m.results
		m.running--
		if r.st != nil {
			if err := r.st.Close(); err != nil {
				m.t.Errorf("close the store of the migrator that returned %d: %v", i+1, err)
			}
		}
		if r.err != nil {
			m.t.Errorf("the migrator that returned %d: Open: %v", i+1, r.err)
		}
	}
	if m.t.Failed() {
		m.t.FailNow()
	}
}

// checkMigratedOnce fails the test unless schema_migrations records every
// embedded migration, once each, under its version.
func checkMigratedOnce(ctx context.Context, t *testing.T, obs *pgx.Conn) {
	t.Helper()
	names, err := pgstore.MigrationNames()
	if err != nil {
		t.Fatalf("load the migrations: %v", err)
	}
	var want []string
	for i, n := range names {
		want = append(want, fmt.Sprintf("%d %s", i+1, n))
	}
	rows, err := obs.Query(ctx, "SELECT version::text || ' ' || name FROM schema_migrations ORDER BY version, name")
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("schema_migrations holds %q, want each migration once: %q", got, want)
	}
}
