// Package journal is the dispatcher's turn journal and transcript mirror, kept
// in one directory on the dispatcher's volume (docs/dispatcher-store.md):
// the file implementation of store.Store (contract.go; the contract
// is internal/dispatcher/store's). One process owns the directory: Open takes an
// exclusive lock on <dir>/LOCK and a second Open fails with ErrLocked.
//
// On-disk layout (every file is append-only JSON Lines):
//
//	<dir>/LOCK                                 flock(2) target; holds the owner's pid
//	<dir>/by-uid/<namespace>/<uid>/runs/<sha256(runId) hex>.jsonl
//	        line 1:  {"rec":"begin","v":1,"session":"ns/uid","runId":"…","digest":"<hex>","at":"…"}
//	        then:    {"rec":"event","seq":N,"type":"partial","at":"…","payload":{…}}   (N = 1, 2, …)
//	        last:    {"rec":"end","state":"finished|failed","lastSeq":N,"at":"…","result":{…},"reason":"…"}
//	        or, once retention pruned the payload, the tombstone: the begin record and
//	                 {"rec":"end","state":"…","lastSeq":N,"at":"…","reason":"…","pruned":true}
//	<dir>/by-uid/<namespace>/<uid>/transcript.jsonl
//	        the caller's records, one compact JSON object a line, and reset markers
//	        {"type":"reset","generation":N,"at":"…"}; a transcript that retention
//	        pruned starts with {"type":"pruned","bytes":N,"at":"…"} (N: the bytes removed)
//	<dir>/lease-epoch                          {"epoch":N}: the epoch of the lease tokens, one more per Open (lease.go)
//	<dir>/by-uid/<namespace>/<uid>/lease.json
//	        only while the journal is closed: the session's lease held at Close,
//	        {"owner":"…","token":N,"expires":"…","held":true}; Open reads it back and removes it (lease.go)
//	<dir>/by-uid/<namespace>/<uid>/reservations.json
//	        the servers the session holds a capacity place on: {"servers":["…"]} (capacity.go)
//	<file>.tmp  the replacement of a run file, transcript, lease, lease epoch or
//	        reservations file being written (renamed over it; a leftover is removed by Open)
//
// Sessions are keyed by the AgentSession's "namespace/uid" (SessionKey): the
// UID is the session's identity, so a session deleted and created again under
// its name starts empty. Both parts must be valid Kubernetes names (a DNS-1123
// label and a DNS-1123 subdomain, which UIDs are), so they are used as
// directory names verbatim and anything else — "..", slashes, upper case — is
// refused with ErrInvalidSession. A journal kept by name (<dir>/sessions, the
// layout before sessions were keyed by UID) is migrated by Open when
// Options.ResolveLegacy can name each session's UID (sessions that no longer
// exist are deleted), and refused with ErrLegacyLayout otherwise (migrate.go).
// Run ids are hashed into file names, so any UTF-8 runId up to MaxRunIDBytes is
// safe.
//
// Durability: the begin record is fsynced (file and directory) before Begin
// returns BeginNew, so a run that may have executed is always known after a
// crash; events are written with one write(2) each and fsynced by Finish;
// transcripts are fsynced by SyncTranscript, once per turn. Leases write
// nothing while the journal is open. So a turn fsyncs four times: its begin
// record and the runs directory, its end, its transcript (a session's first
// write in a process also makes its directories durable once). On Open a torn last
// line is dropped (the file is truncated to its last complete record), a run
// file whose begin record never completed is removed (its Begin never
// returned), and anything worse is copied aside as *.corrupt and reported by
// Recovery. A run whose end cannot be written (a full disk) ends in memory
// only, for this process's readers, and is recovered as failed after a
// restart (unrecorded.go).
//
// Never replay: the journal answers, per runId, "new", "finished — replay the
// record", "running — attach" or "conflict"; it never re-runs anything and
// never decides to. A run found running at Open stays running — its events can
// still be read — until Recover (or MarkFailed) ends it (Running lists
// them). A failed run is replayed as failed; a retry needs a new runId. The
// guarantee lasts for the whole retention (Options.MaxAge): only then is a run
// forgotten and its runId free again.
//
// Leases and capacity (lease.go, claim.go, capacity.go, sessionfiles.go):
// each session's lease lives in memory, its tokens above every earlier one
// through an epoch persisted at Open; only a lease held at Close is written
// down, for the next Open. Capacity reservations are a small file in the
// session's directory, loaded at Open and replaced whole at every change. Claim is
// Begin under a lease: the lease is checked, and a BeginNew handle is fenced
// by it at every Append and Finish; Begin itself checks no lease (callers
// that do not take leases, and tests). A grant and a fenced write of one
// session exclude each other (leaseState.fence), which is what makes the
// fencing exact although one process owns the directory.
//
// Inboxes and takeover (inbox.go, claim.go): a running run's inbox (Post,
// Inbox) lives in memory on the run's state, with no file — the one process
// is both poster and owner, and a restart ends the runs that were running —
// and is ordered against the run's end by the run's lock. Sweep is Recover
// for no owner: under each session's fence it ends the running runs of an
// expired or free lease. A run begun by Begin is under no lease, so Sweep
// ends it: callers of Begin do not sweep.
//
// Retention (retention.go, tombstone.go, caps.go, namespaces.go): Prune runs
// at Open and periodically (RunRetention, for as long as the dispatcher is
// up). It forgets runs that ended more than Options.MaxAge ago. Everything
// else it may prune is payload, never a runId: Options.MaxRuns (across all
// sessions) and Options.MaxNamespaceBytes (per namespace: run files and
// transcripts) reduce the oldest ended runs to their tombstone — runId,
// request digest, final state, finish time — which Begin and Lookup answer
// with a *RunPrunedError; a namespace still over its bytes then loses the
// transcripts of its idle sessions, least recently active first. Running runs
// and the transcripts of sessions with a running run are never pruned.
// Tombstones have their own bound, Options.MaxNamespaceRuns runs per
// namespace: at the bound, Begin refuses new runIds of the namespace with a
// *RetentionLimitError until runs age out (or sessions are deleted), rather
// than forget a runId early.
package journal
