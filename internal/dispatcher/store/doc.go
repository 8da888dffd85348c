// Package store is the dispatcher's storage contract: the Store interface the
// turn engine writes through, with every promise an implementation keeps. The
// file implementation is internal/dispatcher/store/journal (one process owns a directory); a
// PostgreSQL one follows, so the contract is written for many dispatchers
// sharing one storage. storetest is the conformance suite both run.
//
// What the engine relies on:
//
//   - A runId is claimed once per session, with its request's digest
//     (Claim): the same request later replays or attaches, another one is
//     a conflict, and nothing runs twice — for the whole retention.
//   - A per-session lease replaces the dispatcher's in-memory per-session
//     lock (docs/dispatcher-store.md): one holder at a time across all
//     dispatchers, waiting without polling, granted with a fencing token that
//     Claim and every write of the claimed run are checked against (ErrFenced),
//     so a holder that lost its lease cannot write into its successor's turn.
//   - Events of a run are read from any sequence number and followed live,
//     woken by appends.
//   - Transcripts are appended and streamed to a writer, never buffered
//     whole.
//   - Capacity reservations per server pod replace counting bound
//     AgentSessions: Reserve is atomic against a limit, idempotent per
//     session and durable.
//   - Start-up recovery (Recover) ends only the runs this owner left or
//     whose lease expired; a live dispatcher's runs are not touched.
//   - Answers (tool results, approvals, user-input answers, interrupts)
//     posted through any dispatcher reach the run's owner (Post, Inbox),
//     once per kind and key, woken without polling.
//   - Live dispatchers take over the runs of one that died (Sweep): a run
//     whose lease expired is ended within the ttl plus the sweep interval.
//   - Retention keeps runIds for its maximum age, bounds runs per
//     namespace, and prunes payloads before it ever forgets a runId.
//
// docs/dispatcher-store.md states the contract in prose with the file
// layout of the journal.
package store
