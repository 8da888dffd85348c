package pgstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Notification channels. Writers send them in the transaction that makes
// the change, so they are delivered at its commit, to every Store.
const (
	// leaseChannel's payload is a session whose lease was freed.
	leaseChannel = "pgstore_lease"
	// runChannel's payload is "<run id> <what>": "event", "end" (the run
	// ended), "gone" (it was deleted) or "inbox" (a message was posted).
	runChannel = "pgstore_run"
)

func leaseKey(session string) string { return "lease " + session }
func runKey(id int64) string         { return "run " + strconv.FormatInt(id, 10) }

// hub hands the notifications one listening connection receives to the
// Store's waiters: Acquire (lease <session>) and Events iterators and Done
// channels (run <id>).
type hub struct {
	mu   sync.Mutex
	subs map[string]map[*subscription]struct{}
}

type subscription struct{ fn func(what string) }

func newHub() *hub { return &hub{subs: map[string]map[*subscription]struct{}{}} }

// subscribe calls fn (which must not block) with each notification of key
// until the returned function is called.
func (h *hub) subscribe(key string, fn func(what string)) (unsubscribe func()) {
	sub := &subscription{fn: fn}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[key] == nil {
		h.subs[key] = map[*subscription]struct{}{}
	}
	h.subs[key][sub] = struct{}{}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.subs[key], sub)
		if len(h.subs[key]) == 0 {
			delete(h.subs, key)
		}
	}
}

// wake returns a channel that a notification of key makes ready, and the
// function that ends the subscription.
func (h *hub) wake(key string) (<-chan struct{}, func()) {
	c := make(chan struct{}, 1)
	return c, h.subscribe(key, func(string) {
		select {
		case c <- struct{}{}:
		default:
		}
	})
}

func (h *hub) notify(key, what string) {
	h.mu.Lock()
	subs := make([]*subscription, 0, len(h.subs[key]))
	for sub := range h.subs[key] {
		subs = append(subs, sub)
	}
	h.mu.Unlock()
	for _, sub := range subs {
		sub.fn(what)
	}
}

// notifyAll wakes every subscriber with "" (re-read the database): after
// the listening connection was lost, notifications may have been missed.
func (h *hub) notifyAll() {
	h.mu.Lock()
	var subs []*subscription
	for _, set := range h.subs {
		for sub := range set {
			subs = append(subs, sub)
		}
	}
	h.mu.Unlock()
	for _, sub := range subs {
		sub.fn("")
	}
}

// listen opens the listening connection.
func (s *Store) listen(ctx context.Context, cfg *pgx.ConnConfig) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+leaseChannel+"; LISTEN "+runChannel); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	return conn, nil
}

// dispatch hands notifications to the hub until Close. When the connection
// fails it reconnects, backing off up to 5 s, and then wakes everyone to
// re-read what they wait for.
func (s *Store) dispatch(conn *pgx.Conn, cfg *pgx.ConnConfig) {
	defer close(s.listening)
	backoff := 50 * time.Millisecond
	for {
		for conn != nil {
			n, err := conn.WaitForNotification(s.ctx)
			if err != nil {
				_ = conn.Close(context.Background())
				conn = nil
				break
			}
			backoff = 50 * time.Millisecond
			switch n.Channel {
			case leaseChannel:
				s.hub.notify(leaseKey(n.Payload), "free")
			case runChannel:
				id, what, _ := strings.Cut(n.Payload, " ")
				s.hub.notify("run "+id, what)
			}
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		if c, err := s.listen(s.ctx, cfg); err == nil {
			conn = c
			s.hub.notifyAll()
		}
	}
}
