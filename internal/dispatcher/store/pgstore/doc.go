// Package pgstore is the dispatcher's Store (internal/dispatcher/store) on PostgreSQL,
// for many dispatchers sharing one database; the file journal
// (internal/dispatcher/store/journal) stays the embedded default. It passes the store
// conformance suite (internal/testutil/storetest) with Stores sharing one
// database as the "other dispatchers" (`make test-postgres`).
//
// Decisions:
//
//   - Schema: embedded, numbered migrations (migrations/NNNN_name.sql),
//     each applied once in its own transaction and recorded in
//     schema_migrations, under a session advisory lock so that replicas
//     starting together migrate once. A database newer than the binary is
//     refused. Give the dispatcher a database of its own: the tables are
//     unqualified.
//   - Fencing: every grant takes its token from one sequence, so tokens only
//     grow, across restarts and deleted sessions. A released grant's row is
//     deleted. Append and Finish lock the run's row and share-lock the
//     session's lease row in their transaction and write only while its
//     token is the run's: a takeover, release or recovery (which update or
//     delete that row) commits before or after the write, never between
//     the check and the write. Claim, Recover and DeleteSession serialize on
//     a per-session transaction advisory lock; Reserve on a per-server one,
//     Claim's namespace bound on a per-namespace one.
//   - Durability: an Append is one statement, committed without waiting
//     for its WAL flush (synchronous_commit off for that transaction
//     alone); so is a transcript append. Readers are shown a running
//     run's events up to runs.durable_seq only, which a group commit
//     (groupCommit) advances: one synchronously committed statement for
//     every run appended to since the last round, whose flush carries all
//     earlier appends; appends made during a round wait for the next. A
//     crash of the server therefore loses only events no reader has seen.
//     A writer keeps its events until they are durable and, when the
//     server restarted since its last write (pg_postmaster_start_time),
//     appends the lost ones again under their numbers; any other loss
//     refuses the writer (no sequence number is given twice), and Sweep or
//     Recover ends the run failed, outcome unknown. Claims, leases, Finish,
//     inboxes and reservations wait for their flush; Finish's carries the
//     run's events and shows them all. SyncTranscript flushes only when no
//     synchronous commit has since the session's last transcript append.
//   - Waking: writers send NOTIFY in the writing transaction (pgstore_lease:
//     a freed session; pgstore_run: "<run> event|end|gone", "event" from
//     the group commit, so after the flush); each Store
//     LISTENs on one dedicated connection and hands them to its waiters.
//     Acquire also waits for the holder's expiry on the store's clock; an
//     Events iterator reads from the database page by page and, caught up,
//     waits only for a notification. A lost listening connection is
//     re-established with backoff and then every waiter re-reads.
//   - Inboxes: one row per message (table inbox, UNIQUE (run, kind, key),
//     removed with the run or its pruned payload), at most
//     Options.MaxInboxMessages and MaxInboxBytes per run (ErrInboxFull).
//     The transaction that ends a run erases its user-input answers'
//     values, which may be secrets (the journal never writes them). Post holds the run's row
//     in its transaction, as Append and Finish do, so it is ordered against
//     the run's end and numbers a run's messages one after the other; it
//     notifies "<run> inbox" on pgstore_run, which wakes the run's Inbox
//     iterators (and makes its Events readers re-read once). Post is not
//     fenced: any dispatcher posts.
//   - Sweep is Recover for no owner: per session, under the same locks, it
//     ends the running runs of an expired or free lease and releases it.
//   - Lease expiry is the database's clock (statement_timestamp(), in the
//     statement that compares): a replica whose clock is off neither takes
//     a live lease nor ends its runs. Only the time left is waited for on
//     the Store's clock. Timestamps and retention are the Store's clock
//     (Options.Clock); the suite steps a fake one and sets it as
//     Options.LeaseClock too.
//   - Acquires of one Store are granted in arrival order (a queue per
//     session, whose head alone asks the database); Acquires of different
//     Stores race.
//   - RunRef.Recovered is true for a running run that another Store
//     instance (another process, or this process before a restart) writes.
//
// Not yet as the journal does it: the per-namespace byte cap
// (journal.Options.MaxNamespaceBytes) is not applied by Prune; when the
// database refuses Finish the run is not ended for this Store's readers (the
// error is returned and the run stays running until Recover); an Events
// iteration over a run whose payload is pruned while it reads ends early
// instead of reading on.
package pgstore
