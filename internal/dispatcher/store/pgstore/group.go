package pgstore

import (
	"context"
	"sync"
	"time"
)

// groupCommit shows readers a run's appended events once they are on the
// disk, for many events and runs at a time. An Append commits without
// waiting for its flush and marks its run here; one statement per round
// then sets durable_seq to last_seq for every marked run and notifies
// their readers, committed synchronously: its flush carries every append
// that committed before it (the WAL is flushed in order). Appends made
// while a round is in flight wait for the next round, so a turn's events
// take a few flushes, not one each. Readers (page) are shown events up to
// durable_seq only, so a crash of the server never takes back an event a
// reader has seen.
type groupCommit struct {
	mu     sync.Mutex
	marked map[int64]*run
	paused bool // tests hold the rounds (export_test.go)

	kick    chan struct{} // a run was marked
	stop    chan struct{} // closed by Close: a last round, then return
	stopped chan struct{} // closed when the loop has returned
}

func newGroupCommit() *groupCommit {
	return &groupCommit{marked: map[int64]*run{}, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), stopped: make(chan struct{})}
}

func (g *groupCommit) mark(r *run) {
	g.mu.Lock()
	g.marked[r.id] = r
	g.mu.Unlock()
	g.wake()
}

func (g *groupCommit) wake() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// take returns the marked runs and forgets them.
func (g *groupCommit) take() map[int64]*run {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.paused || len(g.marked) == 0 {
		return nil
	}
	runs := g.marked
	g.marked = map[int64]*run{}
	return runs
}

// putBack marks runs again after a failed round.
func (g *groupCommit) putBack(runs map[int64]*run) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, r := range runs {
		g.marked[id] = r
	}
}

// flushDurable is a round: its commit waits for the WAL flush (the
// server's default synchronous_commit).
const flushDurable = `WITH u AS (UPDATE runs SET durable_seq = last_seq
		WHERE id = ANY($1::bigint[]) AND durable_seq < last_seq RETURNING id, durable_seq),
	n AS (SELECT pg_notify('` + runChannel + `', id::text || ' event') FROM u)
	SELECT id, durable_seq, (SELECT count(*) FROM n) FROM u`

// commitGroups runs rounds until Close, which gets a last one. A failed
// round's runs are marked again and tried after a backoff of up to 5 s.
func (s *Store) commitGroups() {
	g := s.group
	defer close(g.stopped)
	backoff := 50 * time.Millisecond
	for {
		select {
		case <-g.kick:
		case <-g.stop:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = s.commitGroup(ctx)
			cancel()
			return
		}
		if err := s.commitGroup(s.ctx); err != nil {
			select {
			case <-time.After(backoff):
			case <-g.stop:
			}
			backoff = min(2*backoff, 5*time.Second)
			g.wake()
			continue
		}
		backoff = 50 * time.Millisecond
	}
}

// commitGroup is one round.
func (s *Store) commitGroup(ctx context.Context) error {
	runs := s.group.take()
	if len(runs) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(runs))
	for id := range runs {
		ids = append(ids, id)
	}
	rows, err := s.pool.Query(ctx, flushDurable, ids)
	if err == nil {
		defer rows.Close()
		for rows.Next() {
			var id, durable, notified int64
			if err = rows.Scan(&id, &durable, &notified); err != nil {
				break
			}
			if r := runs[id]; r != nil {
				r.flushedTo(durable)
			}
		}
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		s.group.putBack(runs)
	}
	return err
}
