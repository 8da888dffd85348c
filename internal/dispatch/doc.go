// Package dispatch is the turn engine: it executes prepared attempts on the
// selected harness — one turn at a time per session, on the session's bound
// app-server or the least-loaded ready one, never replaying a turn that
// reached a harness (DESIGN.md §4, §5; issue 6).
//
// Engine.Turn runs one TurnRequest (DecodeTurnRequest) and streams its
// events — selected, partial, agent_event, tool_call, tool_terminal,
// transcript, result, error — to a Sink, journaling each run
// (internal/journal) so a repeated runId is replayed or followed instead of
// run again. Engine.Decide is the side-effect-free decision,
// Engine.SubmitToolResult answers host tool calls, Engine.Recover is the
// start-up recovery. PickServer chooses a turn's app-server; the session
// lock serializes a session's turns. FinalizerReconciler owns the
// AgentSession finalizer JournalFinalizer, which deletes a deleted
// session's journal runs and transcript mirror.
//
// Files: engine.go (Engine, Turn and its steps: prepare, execute, drive,
// reattach, relay, host-tool waits), turnerror.go (TurnError, ResultEvent),
// replay.go (following a journaled run), recover.go (start-up recovery),
// reads.go (the session, server pods and token reads), records.go (the
// decision record, status helpers), status.go (the dispatcher's part of the
// status and its UID-keyed memory), request.go, servers.go, pool.go, lock.go,
// metrics.go, finalizer.go. Splitting the turn itself into types that each
// own one thing is issue 12's run-handle work.
//
// Decisions taken here:
//   - A turn refused before any runtime is touched (fail-closed decision,
//     EmbeddedRuntimeSelected, ArtifactMismatch, NativeThreadLost,
//     HarnessUnavailable, HarnessAtCapacity, VersionBelowFloor at the
//     handshake) is not journaled: nothing ran, so the gateway may retry the
//     same runId. Everything from the journal's begin record on is.
//   - Every status write applies the dispatcher's whole part of the status
//     (agentHarnessId, lastSelection, nativeBinding, activeTurn, lastTurn,
//     counters): with server-side apply an omitted field this manager owned
//     is removed, which is how activeTurn is cleared. The engine remembers
//     its last apply per session, so a lagging informer cache never rolls
//     counters back (one dispatcher writes these fields, DESIGN.md §4).
//   - A server that stays unreachable for Options.ReattachTimeout after its
//     connection dropped mid-turn ends the turn with HarnessUnavailable
//     (retryable: the next turn resumes the thread once the server is
//     back), replaySafe false, no scope (no other harness may run it).
//   - A session deleted mid-turn: the finalizer interrupts the turn (it ends
//     aborted and is recorded), waits for it under the session lock, then
//     deletes the journal; a turn that waited for the lock finds the session
//     being deleted and is refused (ErrSessionNotFound). While the journal
//     still shows a run running (ErrSessionBusy) the reconcile is requeued.
//     The dispatcher binary, its manager and its RBAC are wired by a later
//     issue (the kubebuilder markers are in finalizer.go).
package dispatch
