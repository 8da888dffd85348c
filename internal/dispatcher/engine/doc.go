// Package engine is the turn engine: it executes prepared attempts on the
// selected harness — one turn at a time per session, on the session's bound
// app-server or the least-loaded ready one, never replaying a turn that
// reached a harness (docs/dispatcher-api.md; docs/design/contract-rules.md,
// rule 5).
//
// The public surface:
//
//   - Engine.Start begins a turn and returns its journaled run
//     (internal/dispatcher/store/journal) once the run is recorded, or the refusal; the turn
//     then runs on the engine's own context. Callers stream the run's events
//     from the journal (journal.Run.Events) — the HTTP API does — and may
//     leave and come back. Engine.Turn is Start followed to the end with a
//     Sink (tests, tools); Follow streams any run to a Sink.
//   - Engine.Interrupt, Engine.SubmitToolResult reach a running turn;
//     Engine.Decide is the side-effect-free decision; Engine.Recover is the
//     start-up recovery; Engine.Drain and Engine.Close end the turns at
//     shutdown (interrupting the native turns once the grace is over).
//   - InterruptSession, AcquireLease, ReleaseLease and ForgetSession
//     (deletion.go) serve the AgentSession finalizer, which lives in
//     internal/dispatcher/sessionfinalizer; GarbageCollector removes the
//     state of sessions that went without it.
//   - Identity (identity.go): a session is its UID — SessionKey keys the
//     journal, the lock, the running turn and the turn token; the working
//     directory on the app-server is <root>/<namespace>/<uid>; a native
//     binding is trusted only when written for this UID.
//
// Types, what each owns, and its lock (no lock guards two of them):
//
//   - Engine (engine.go): the dependencies and the components below; the
//     context turns run on. No lock of its own. One turn at a time per
//     session is the store's session lease (internal/dispatcher/store: Acquire in
//     arrival order, renewed while the turn runs, fencing its writes), so
//     it holds across dispatchers sharing a store.
//   - liveTurns (live.go): the running turns (what Interrupt reaches) and
//     their host tool calls waiting for the client; its mutex guards both
//     maps and the idle signal Drain waits for.
//   - statusCache (status.go): the last status applied per session UID, so a
//     lagging informer cache never rolls counters back; its mutex guards the
//     map.
//   - connPool (pool.go): one connection per app-server; its mutex guards the
//     pool.
//   - prepared (placement.go): a turn's decision, harness, server and
//     connection — built by prepare (decide: selection and the checks that
//     need no server; place: server choice, artifact check, token, dial).
//     Immutable once built.
//   - runningTurn (run.go, drive.go, relay.go, activeturn.go): one
//     journaled turn while it runs — its journal writes, its native turn
//     (start, reattach), its status writes. Only its own goroutine touches
//     it, but for the delayed activeTurn write (a timer's goroutine, which
//     the turn waits for before its end status) and its lease state
//     (atomics the renewing goroutine updates).
//   - GarbageCollector (gc.go): no state.
//
// Other files: start.go (Start, Turn, Follow), capacity.go (a session's
// place on a pod: maxSessionsPerReplica as store reservations),
// completion.go and callplaces.go (isolated completion and finalization,
// metered like turns: a call lease per session and places), native.go (a
// deleted session's
// threads and directory on the app-servers), recover.go (start-up
// recovery), reads.go (the session, server pods and token reads), records.go
// (the decision record, status helpers), servers.go (PickServer),
// reseed.go (resume the bound thread or re-seed it when the host tools
// changed), metrics.go. What crosses the API — the request, the events and their
// payloads, the error — is package wire's.
//
// Decisions taken here:
//   - A turn refused before any runtime is touched (fail-closed decision,
//     EmbeddedRuntimeSelected, ArtifactMismatch, NativeThreadLost,
//     HarnessUnavailable, HarnessAtCapacity, VersionBelowFloor at the
//     handshake) is not journaled: nothing ran, so the gateway may retry the
//     same runId. Everything from the journal's begin record on is, and every
//     journaled run ends with a `result` or `error` event.
//   - A turn is journaled before it starts on its app-server and registered
//     as running before Start returns, so an interrupt never misses it.
//   - Every status write applies the dispatcher's whole part of the status
//     (agentHarnessId, lastSelection, nativeBinding, activeTurn, lastTurn,
//     counters): with server-side apply an omitted field this manager owned
//     is removed, which is how activeTurn is cleared. The turn's `result`
//     or `error` is journaled first, then its status is written, then its
//     run ends: the client has the outcome at once, and one that saw the
//     run's end finds the status. A failed status write is retried while
//     the turn holds the session's lease (activeturn.go).
//   - status.activeTurn is written only for a turn still running
//     Options.ActiveTurnDelay after it started: a shorter turn makes one
//     status write. A turn inside the delay is not seen by the webhook's
//     mid-turn rule nor by a restarted dispatcher's activeTurn cleanup;
//     Recover records it from the store (an unmarked run), and the
//     session's next turn interrupts its native turn if it still runs.
//   - A server that stays unreachable for Options.ReattachTimeout after its
//     connection dropped mid-turn ends the turn with HarnessUnavailable
//     (retryable: the next turn resumes the thread once the server is back),
//     replaySafe false, no scope (no other harness may run it).
//   - A journal or transcript write that fails interrupts the native turn
//     and fails the turn visibly, instead of running on unrecorded: its
//     `error` is HarnessUnavailable naming what refused the write (a full
//     disk), TranscriptLimitExceeded only for the transcript's size limit.
//     On a full disk the journal ends the run in memory when its end cannot
//     be written (journal's unrecorded.go), and a session can still be
//     deleted: the finalizer deletes the journal even when the store cannot
//     write its lease grant.
//   - A panic while a turn runs is recovered, logged, and fails that turn
//     only.
//   - A session deleted mid-turn: the finalizer interrupts the turn (it ends
//     aborted and is recorded), waits for it by taking the session's lease,
//     then deletes the journal and the native state; a turn that waited for
//     the lease finds the session being deleted and is refused
//     (ErrSessionNotFound). While the store still shows a run running or
//     its lease held (ErrSessionBusy) the reconcile is requeued.
package engine
