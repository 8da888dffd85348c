package journal

import (
	"context"
	"fmt"
	"iter"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// A running run's inbox (store.Store's Post and Inbox) is kept in memory,
// on the run's state: one process owns the directory, so the poster and the
// owner share it, and a restart ends every run that was running (Recover),
// so no message has to outlive the process. It is guarded by the run's mu,
// under which the run also ends: a Post either lands before the end or sees
// it, and an Inbox iteration that sees the end has every message posted
// before it.

// runInbox is the messages posted to a running run.
type runInbox struct {
	msgs  []store.InboxMessage // in Seq order, Seq = index+1; never changed once appended
	seqOf map[inboxKey]int64
	wake  chan struct{} // closed by the next Post; created by a waiting reader
}

type inboxKey struct {
	kind store.InboxKind
	key  string
}

// Post implements store.Store.
func (j *Journal) Post(session, runID string, m store.InboxMessage) (int64, error) {
	m, err := store.NormalizeInbox(m)
	if err != nil {
		return 0, err
	}
	rs, err := j.runOf(session, runID)
	if err != nil {
		return 0, fmt.Errorf("journal: post to run %q of session %s: %w", runID, session, err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.state != StateRunning {
		return 0, fmt.Errorf("journal: post to run %q of session %s: %w", runID, session, ErrRunEnded)
	}
	in := &rs.inbox
	k := inboxKey{m.Kind, m.Key}
	if seq, ok := in.seqOf[k]; ok {
		return 0, &store.AlreadyPostedError{Session: session, RunID: runID, Kind: m.Kind, Key: m.Key, Seq: seq}
	}
	if in.seqOf == nil {
		in.seqOf = map[inboxKey]int64{}
	}
	m.Seq, m.At = int64(len(in.msgs))+1, j.now()
	in.msgs = append(in.msgs, m)
	in.seqOf[k] = m.Seq
	if in.wake != nil {
		close(in.wake)
		in.wake = nil
	}
	return m.Seq, nil
}

// Inbox implements store.Store.
func (j *Journal) Inbox(ctx context.Context, ref store.RunRef, afterSeq int64) iter.Seq2[store.InboxMessage, error] {
	return func(yield func(store.InboxMessage, error) bool) {
		rs, err := j.runOf(ref.Session, ref.RunID)
		if err != nil {
			yield(store.InboxMessage{}, fmt.Errorf("journal: inbox of run %q of session %s: %w", ref.RunID, ref.Session, err))
			return
		}
		if rs.currentState() != StateRunning {
			return // the index holds an ended run's copy, without an inbox
		}
		after := max(afterSeq, 0)
		for {
			next, ended, wake := rs.inboxAfter(after)
			for _, m := range next {
				if !yield(m, nil) {
					return
				}
				after = m.Seq
			}
			switch {
			case len(next) > 0:
				continue
			case ended:
				return
			}
			select {
			case <-wake:
			case <-rs.done:
			case <-ctx.Done():
				yield(store.InboxMessage{}, ctx.Err())
				return
			case <-j.closing:
				yield(store.InboxMessage{}, ErrClosed)
				return
			}
		}
	}
}

// inboxAfter returns the messages after seq, whether the run has ended,
// and, when there are none and it runs, the channel the next Post closes.
func (rs *runState) inboxAfter(seq int64) (next []store.InboxMessage, ended bool, wake <-chan struct{}) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if seq < int64(len(rs.inbox.msgs)) {
		return rs.inbox.msgs[seq:], false, nil
	}
	if rs.state != StateRunning {
		return nil, true, nil
	}
	if rs.inbox.wake == nil {
		rs.inbox.wake = make(chan struct{})
	}
	return nil, false, rs.inbox.wake
}

// runOf returns the index's entry of a run — the live state of a running
// one — once a Begin writing it is done: ErrNotFound for an unknown run.
func (j *Journal) runOf(session, runID string) (*runState, error) {
	if err := ValidateSession(session); err != nil {
		return nil, err
	}
	key := runKey{session, runID}
	for {
		j.mu.Lock()
		if j.closed.Load() {
			j.mu.Unlock()
			return nil, ErrClosed
		}
		rs := j.runs[key]
		j.mu.Unlock()
		if rs == nil {
			return nil, ErrNotFound
		}
		if !rs.creating() {
			return rs, nil
		}
		<-rs.ready
	}
}
