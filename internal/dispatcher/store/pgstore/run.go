package pgstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// run is a handle on one run. A writer's Append and Finish check, in their
// transaction, that the lease the run was claimed under is still the
// session's current grant, holding the lease row so that no takeover,
// release or recovery commits in between.
type run struct {
	s      *Store
	id     int64
	token  int64
	writer bool

	mu      sync.Mutex
	info    store.RunInfo // as last seen
	ended   bool
	written int64 // the last sequence number this writer appended (refusal)
	durable int64 // its events up to it are on the disk (groupCommit)
	// unflushed are this writer's events after durable, kept to append them
	// again when a crash of the server lost them (resend).
	unflushed []sentEvent
	// serverStart is the server's start time at this writer's last write:
	// a later one says the server restarted.
	serverStart time.Time

	done      chan struct{}
	doneOnce  sync.Once // closes done
	watchOnce sync.Once // subscribes done to the run's notifications
}

func (s *Store) handle(r runRow, writer bool) *run {
	h := &run{s: s, id: r.id, token: r.token, writer: writer, info: r.info, durable: r.durable, done: make(chan struct{})}
	if r.info.State != store.StateRunning {
		h.end(r.info)
	}
	return h
}

// end records that the run ended and closes Done.
func (r *run) end(info store.RunInfo) {
	r.mu.Lock()
	r.info, r.ended = info, true
	r.mu.Unlock()
	r.doneOnce.Do(func() { close(r.done) })
}

func (r *run) Ref() store.RunRef {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.info.RunRef
}

// Info reads the run's row; when the database cannot answer (or the Store
// is closed) it is the snapshot last seen.
func (r *run) Info() store.RunInfo {
	if row, err := r.s.scanRun(r.s.pool.QueryRow(r.s.ctx, "SELECT "+runColumns+" FROM runs WHERE id = $1", r.id)); err == nil {
		if row.info.State != store.StateRunning {
			r.end(row.info)
		}
		r.mu.Lock()
		r.info = row.info
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.info
}

// Done is closed when the run ended, as this handle's writes, its readers,
// or the run's notifications (from any Store) learn it.
func (r *run) Done() <-chan struct{} {
	r.watchOnce.Do(func() {
		unsubscribe := r.s.hub.subscribe(runKey(r.id), func(what string) {
			switch what {
			case "end", "gone":
				r.doneOnce.Do(func() { close(r.done) })
			case "": // the listening connection was re-established: re-read
				go r.Info()
			}
		})
		go func() {
			select {
			case <-r.done:
			case <-r.s.closed:
			}
			unsubscribe()
		}()
		// It may have ended before the subscription.
		_ = r.Info()
	})
	return r.done
}

// sentEvent is an event a writer appended, as it sent it.
type sentEvent struct {
	seq     int64
	typ     string
	at      time.Time
	payload []byte
}

// flushedTo records that the run's events up to seq are on the disk.
func (r *run) flushedTo(seq int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if seq <= r.durable {
		return
	}
	r.durable = seq
	i := 0
	for i < len(r.unflushed) && r.unflushed[i].seq <= seq {
		i++
	}
	r.unflushed = append(r.unflushed[:0:0], r.unflushed[i:]...)
}

// writable heads the one statement of an Append or a Finish: r locks the
// run's row, l share-locks its session's lease row (in this order, as
// Recover and Sweep take them), and ok has a row, the run's next sequence
// number, when the write may go ahead. Parameters: $1 the run's id, $2 the
// writer's token, $3 the last sequence number it appended. Holding both
// rows, no takeover, release or recovery commits between the check and the
// write; the statement's answer (writeCheck's columns) says why it did not
// write. One statement is one round trip.
const writable = `WITH r AS (SELECT session, run_id, state, last_seq FROM runs WHERE id = $1 FOR UPDATE),
	l AS (SELECT token FROM leases WHERE session = (SELECT session FROM r) FOR SHARE),
	ok AS (SELECT last_seq + 1 AS next_seq FROM r
		WHERE state = 'running' AND coalesce((SELECT token FROM l), 0) = $2::bigint AND last_seq >= $3::bigint)`

// writeCheck are the columns a writable statement answers with, before its
// own: what the run and its lease were when the statement locked them, and
// when the server started.
const writeCheck = `r.session, r.run_id, r.state, r.last_seq, coalesce((SELECT token FROM l), 0), pg_postmaster_start_time()`

// checked is what writeCheck answers.
type checked struct {
	session, runID, state string
	lastSeq, current      int64
	serverStart           time.Time
}

func (c *checked) dest() []any {
	return []any{&c.session, &c.runID, &c.state, &c.lastSeq, &c.current, &c.serverStart}
}

// refusal is why a writable statement did not write: fenced first (a stale
// holder learns it lost the session), then ended, then whether the
// database still holds every event this writer appended. nil when it
// wrote.
//
// An Append returns before its event is flushed (appendEvent), so a crash
// of the server can lose a run's latest events — never those readers were
// shown (groupCommit). The writer appends them again (resend) when the
// server restarted since its last write; any other loss refuses the writer,
// and the run stays running until Sweep or Recover ends it failed, outcome
// unknown.
func (r *run) refusal(c checked, written int64) error {
	if c.state != string(store.StateRunning) {
		r.Info() // reads the ended run's row and closes Done
	}
	switch {
	case c.current != r.token:
		return errFenced(c.session)
	case c.state != string(store.StateRunning):
		return fmt.Errorf("%w: run %q", store.ErrRunEnded, c.runID)
	case c.lastSeq < written:
		return fmt.Errorf("pgstore: run %q: the database holds its events up to %d, but this dispatcher appended up to %d: "+
			"the server lost the latest ones (it crashed before flushing them); the run cannot go on without numbering an event twice",
			c.runID, c.lastSeq, written)
	}
	return nil
}

// mayResend reports whether the database lost only this writer's events
// that no reader was shown, in a restart of the server: then it holds every
// one of them (unflushed) and appends them again under their numbers.
func (r *run) mayResend(c checked, written int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return c.state == string(store.StateRunning) && c.current == r.token && c.lastSeq < written &&
		!r.serverStart.IsZero() && !c.serverStart.Equal(r.serverStart) &&
		c.lastSeq >= r.durable && len(r.unflushed) > 0 && r.unflushed[len(r.unflushed)-1].seq == written
}

// resendEvents appends events again, under their numbers, after those the
// database holds ($3); $4…$7 the events, $8 the last one's number, $9
// their bytes.
const resendEvents = writable + `,
	e AS (INSERT INTO events (run, seq, type, at, payload)
		SELECT $1, ev.seq, ev.type, ev.at, ev.payload
		FROM ok, unnest($4::bigint[], $5::text[], $6::timestamptz[], $7::bytea[]) AS ev (seq, type, at, payload)
		WHERE ev.seq > $3::bigint),
	u AS (UPDATE runs SET last_seq = $8::bigint, bytes = bytes + $9::bigint FROM ok WHERE runs.id = $1)
	SELECT ` + writeCheck + `, (SELECT count(*) FROM ok), set_config('synchronous_commit', 'off', true) FROM r`

// resend appends again the events after lastSeq that a crash of the server
// lost, as they were first sent; readers were never shown them.
func (r *run) resend(c checked) error {
	r.mu.Lock()
	var (
		seqs     []int64
		types    []string
		ats      []time.Time
		payloads [][]byte
		size     int64
	)
	for _, ev := range r.unflushed {
		if ev.seq > c.lastSeq {
			seqs, types, ats, payloads = append(seqs, ev.seq), append(types, ev.typ), append(ats, ev.at), append(payloads, ev.payload)
			size += int64(len(ev.typ) + len(ev.payload) + eventOverhead)
		}
	}
	r.mu.Unlock()
	var (
		again   checked
		wrote   int64
		setting string
	)
	err := r.s.pool.QueryRow(r.s.ctx, resendEvents, r.id, r.token, c.lastSeq, seqs, types, ats, payloads, seqs[len(seqs)-1], size).
		Scan(append(again.dest(), &wrote, &setting)...)
	if err != nil {
		return r.writeErr("append lost events to run again", err)
	}
	if wrote == 0 {
		return r.refusal(again, c.lastSeq+1)
	}
	r.mu.Lock()
	r.serverStart = again.serverStart
	r.mu.Unlock()
	r.s.group.mark(r)
	return nil
}

// appendEvent is an Append's statement. Its commit does not wait for the
// WAL flush (synchronous_commit off for its transaction alone), which would
// otherwise be one disk flush per event; readers are shown the event after
// a group commit's flush (groupCommit). Claims, leases and Finish still
// wait for theirs, and Finish's flush takes the run's earlier events with
// it: an ended run is durable whole, as the journal's is after its end's
// fsync.
const appendEvent = writable + `,
	e AS (INSERT INTO events (run, seq, type, at, payload) SELECT $1, next_seq, $4::text, $5::timestamptz, $6::bytea FROM ok),
	u AS (UPDATE runs SET last_seq = ok.next_seq, bytes = bytes + $7::bigint FROM ok WHERE runs.id = $1)
	SELECT ` + writeCheck + `, (SELECT next_seq FROM ok), set_config('synchronous_commit', 'off', true) FROM r`

func (r *run) Append(typ string, payload json.RawMessage) (int64, error) {
	if !r.writer {
		return 0, store.ErrNotWriter
	}
	if err := r.s.check(); err != nil {
		return 0, err
	}
	if !store.ValidEventType(typ) {
		return 0, fmt.Errorf("%w: event type %q: want [A-Za-z0-9_.:/-]{1,64}", store.ErrInvalidRecord, typ)
	}
	compact, err := compactJSON(payload)
	if err != nil {
		return 0, err
	}
	at := r.s.now()
	for resent := false; ; resent = true {
		r.mu.Lock()
		written := r.written
		r.mu.Unlock()
		var (
			c       checked
			seq     *int64
			setting string
		)
		err = r.s.pool.QueryRow(r.s.ctx, appendEvent, r.id, r.token, written, typ, at, compact,
			int64(len(typ)+len(compact)+eventOverhead)).Scan(append(c.dest(), &seq, &setting)...)
		if isNoRows(err) {
			return 0, fmt.Errorf("%w: the run was deleted", store.ErrFenced)
		}
		if err != nil {
			return 0, r.writeErr("append to run", err)
		}
		if seq == nil {
			if !resent && r.mayResend(c, written) {
				if err := r.resend(c); err != nil {
					return 0, err
				}
				continue
			}
			if err := r.refusal(c, written); err != nil {
				return 0, err
			}
			return 0, r.s.dbErr("append to run", fmt.Errorf("run %q: the write was refused for no reason it names", c.runID))
		}
		r.mu.Lock()
		r.info.LastSeq, r.written, r.serverStart = *seq, max(r.written, *seq), c.serverStart
		r.unflushed = append(r.unflushed, sentEvent{seq: *seq, typ: typ, at: at, payload: compact})
		r.mu.Unlock()
		r.s.group.mark(r)
		return *seq, nil
	}
}

// eventOverhead is what retention counts for an event beside its type and
// payload (sequence number and time).
const eventOverhead = 16

func (r *run) writeErr(what string, err error) error {
	if isStoreErr(err) {
		return err
	}
	return r.s.dbErr(what, err)
}

// finishRun is Finish's statement: the run's end, its events shown to
// readers, its user-input answers' values erased and the "end"
// notification, when writable lets it write. Its commit waits for the WAL
// flush, which takes the run's earlier events with it.
const finishRun = writable + `,
	f AS (UPDATE runs SET state = $4::text, finished_at = $5::timestamptz, result = $6::bytea, bytes = bytes + $7::bigint,
			durable_seq = runs.last_seq
		FROM ok WHERE runs.id = $1 RETURNING runs.id),
	a AS (` + eraseAnswersOf + `),
	n AS (SELECT pg_notify('` + runChannel + `', id::text || ' end') FROM f)
	SELECT ` + writeCheck + `, (SELECT count(*) FROM n) FROM r`

func (r *run) Finish(state store.State, result json.RawMessage) error {
	if !r.writer {
		return store.ErrNotWriter
	}
	if err := r.s.check(); err != nil {
		return err
	}
	if state != store.StateFinished && state != store.StateFailed {
		return fmt.Errorf("%w: a run ends finished or failed, not %q", store.ErrInvalidRecord, state)
	}
	compact, err := compactJSON(result)
	if err != nil {
		return err
	}
	at := r.s.now()
	for resent := false; ; resent = true {
		r.mu.Lock()
		written := r.written
		r.mu.Unlock()
		var (
			c     checked
			ended int64
		)
		mark := r.s.unflushed.mark()
		err = r.s.pool.QueryRow(r.s.ctx, finishRun, r.id, r.token, written, string(state), at, compact, int64(len(compact))).
			Scan(append(c.dest(), &ended)...)
		if isNoRows(err) {
			return fmt.Errorf("%w: the run was deleted", store.ErrFenced)
		}
		if err != nil {
			return r.writeErr("finish run", err)
		}
		if ended == 0 {
			if !resent && r.mayResend(c, written) {
				if err := r.resend(c); err != nil {
					return err
				}
				continue
			}
			if err := r.refusal(c, written); err != nil {
				return err
			}
			return r.s.dbErr("finish run", fmt.Errorf("run %q: the write was refused for no reason it names", c.runID))
		}
		// Its flush carried the transcript appends that returned before it,
		// and the run's events.
		r.s.unflushed.flushedTo(mark)
		r.flushedTo(c.lastSeq)
		r.mu.Lock()
		info := r.info
		r.mu.Unlock()
		info.State, info.FinishedAt, info.LastSeq, info.Result, info.Recovered = state, at, c.lastSeq, nil, false
		if len(compact) > 0 {
			info.Result = compact
		}
		r.end(info)
		return nil
	}
}

// compactJSON is payload compacted, nil when empty.
func compactJSON(payload json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(payload)) == 0 {
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, payload); err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrInvalidRecord, err)
	}
	return b.Bytes(), nil
}

// eventsPage bounds what an Events iterator holds in memory.
const eventsPage = 256

// page reads the run's events after seq that readers are shown, at most
// eventsPage of them, and the run's row as it was before them (so events
// up to its durable_seq are all committed and on the disk).
func (r *run) page(ctx context.Context, after int64) (runRow, []store.Event, error) {
	row, err := r.s.scanRun(r.s.pool.QueryRow(ctx, "SELECT "+runColumns+" FROM runs WHERE id = $1", r.id))
	if err != nil {
		return row, nil, err
	}
	// A running run's events are shown once on the disk (groupCommit); an
	// ended run's all are.
	shown := row.durable
	if row.info.State != store.StateRunning {
		shown = row.info.LastSeq
	}
	if after >= shown {
		return row, nil, nil
	}
	rows, err := r.s.pool.Query(ctx, "SELECT seq, type, at, payload FROM events WHERE run = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4",
		r.id, after, shown, eventsPage)
	if err != nil {
		return row, nil, err
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Event, error) {
		var (
			ev      store.Event
			payload []byte
		)
		err := row.Scan(&ev.Seq, &ev.Type, &ev.At, &payload)
		ev.At = ev.At.UTC()
		if len(payload) > 0 {
			ev.Payload = payload
		}
		return ev, err
	})
	return row, evs, err
}

// Events reads from the database page by page and, caught up with a running
// run, waits for its notification.
func (r *run) Events(ctx context.Context, afterSeq int64) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		if err := r.s.check(); err != nil {
			yield(store.Event{}, err)
			return
		}
		wake, unsubscribe := r.s.hub.wake(runKey(r.id))
		defer unsubscribe()
		after, first := max(afterSeq, 0), true
		for {
			row, evs, err := r.page(ctx, after)
			switch {
			case ctx.Err() != nil:
				yield(store.Event{}, ctx.Err())
				return
			case isNoRows(err):
				yield(store.Event{}, fmt.Errorf("%w: run %d was forgotten or its session deleted", store.ErrNotFound, r.id))
				return
			case err != nil:
				yield(store.Event{}, r.s.dbErr("read events", err))
				return
			case first && row.pruned:
				yield(store.Event{}, r.s.pruned(row))
				return
			}
			first = false
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
				after = ev.Seq
			}
			if len(evs) > 0 {
				continue
			}
			// Ended and read to its end — or pruned while this iteration
			// read it: its events are gone, so it ends here.
			if row.info.State != store.StateRunning && (after >= row.info.LastSeq || row.pruned) {
				r.end(row.info)
				return
			}
			select {
			case <-wake:
			case <-ctx.Done():
				yield(store.Event{}, ctx.Err())
				return
			case <-r.s.closed:
				yield(store.Event{}, store.ErrClosed)
				return
			}
		}
	}
}
