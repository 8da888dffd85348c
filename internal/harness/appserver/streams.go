package appserver

import (
	"context"
	"fmt"
	"time"
)

// maxUnclaimedTurns bounds the buffered event streams of turns nobody has
// attached to, per thread.
const maxUnclaimedTurns = 32

// interruptTimeout bounds the turn/interrupt the client sends for a turn
// whose stream it failed.
const interruptTimeout = 30 * time.Second

// threadState holds a thread's handlers and the event streams of its turns.
// Only threads with a threadState (opened on this connection and not
// released) get events.
type threadState struct {
	handlers *Handlers
	turns    map[string]*turnStream
	order    []string // turn ids in creation order
}

func (c *Client) threadLocked(threadID string) *threadState {
	th := c.threads[threadID]
	if th == nil {
		th = &threadState{turns: map[string]*turnStream{}}
		c.threads[threadID] = th
	}
	return th
}

func (c *Client) streamLocked(threadID, turnID string) *turnStream {
	return c.threadLocked(threadID).stream(turnID)
}

// stream returns the turn's stream, creating an unclaimed one.
func (th *threadState) stream(turnID string) *turnStream {
	s := th.turns[turnID]
	if s == nil {
		s = &turnStream{notify: make(chan struct{})}
		th.turns[turnID] = s
		th.order = append(th.order, turnID)
		th.prune()
	}
	return s
}

// prune drops the oldest unattached streams beyond the bound.
func (th *threadState) prune() {
	unclaimed := 0
	for _, id := range th.order {
		if s := th.turns[id]; s != nil && !s.attached {
			unclaimed++
		}
	}
	for i := 0; unclaimed > maxUnclaimedTurns && i < len(th.order); i++ {
		id := th.order[i]
		if s := th.turns[id]; s != nil && !s.attached {
			delete(th.turns, id)
			unclaimed--
		}
	}
	kept := th.order[:0]
	for _, id := range th.order {
		if th.turns[id] != nil {
			kept = append(kept, id)
		}
	}
	th.order = kept
}

func (c *Client) dropStreamLocked(threadID, turnID string) {
	if th := c.threads[threadID]; th != nil {
		delete(th.turns, turnID)
	}
}

// deliverLocked appends ev to its turn's stream. An event of a thread this
// client has not opened is dropped and counted, never buffered; one that
// would take the turn's unread events over a limit fails the stream.
func (c *Client) deliverLocked(ev Event) {
	m := ev.Meta()
	th := c.threads[m.ThreadID]
	if th == nil {
		c.unknownDropped.Add(1)
		if ok, skipped := c.unknownLog.allow(time.Now()); ok {
			c.log.Info("dropped a notification for a thread this connection has not opened",
				"thread", m.ThreadID, "turn", m.TurnID, "method", m.Method, "droppedSinceLastRecord", skipped)
		}
		return
	}
	s := th.stream(m.TurnID)
	if s.err != nil {
		return // nobody reads a failed stream any more
	}
	size := int64(len(m.Params))
	switch {
	case len(s.events) >= c.opts.MaxUnreadEvents:
		c.failStreamLocked(s, m.ThreadID, m.TurnID, fmt.Errorf(
			"the app-server sent more than %d notifications its consumer had not read (Options.MaxUnreadEvents)", c.opts.MaxUnreadEvents))
	case s.bytes+size > c.opts.MaxUnreadBytes:
		c.failStreamLocked(s, m.ThreadID, m.TurnID, fmt.Errorf(
			"the app-server sent more than %d bytes of notifications its consumer had not read (Options.MaxUnreadBytes)", c.opts.MaxUnreadBytes))
	default:
		s.events = append(s.events, ev)
		s.bytes += size
		s.wakeLocked()
	}
}

// failStreamLocked stops delivering a turn's events: the buffer is freed,
// its consumer gets a *TurnStreamError, and the turn is interrupted on the
// server, since nobody will read what it does any more.
func (c *Client) failStreamLocked(s *turnStream, threadID, turnID string, cause error) {
	s.err = &TurnStreamError{ThreadID: threadID, TurnID: turnID, Err: cause}
	s.events, s.bytes = nil, 0
	s.wakeLocked()
	c.log.Error(s.err, "stopped delivering a turn's events; interrupting it", "thread", threadID, "turn", turnID)
	c.goLocked(func() {
		defer func() {
			if pe := recovered("the interrupt of a failed turn", recover()); pe != nil {
				c.logPanic(pe)
			}
		}()
		ctx, cancel := context.WithTimeout(c.reqCtx, interruptTimeout)
		defer cancel()
		_ = c.call(ctx, MethodTurnInterrupt, map[string]string{"threadId": threadID, "turnId": turnID}, nil, threadID, turnID)
	})
}

// failTurn fails the turn's stream, when the thread is open on this client.
func (c *Client) failTurn(threadID, turnID string, cause error) {
	if threadID == "" || turnID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if th := c.threads[threadID]; th != nil && c.lostErr == nil {
		if s := th.stream(turnID); s.err == nil {
			c.failStreamLocked(s, threadID, turnID, cause)
		}
	}
}

// goLocked runs fn on a goroutine that Close waits for, unless the
// connection has ended. c.mu is held: Close's shutdown sets lostErr under
// it before waiting, so no goroutine is added to a finished wait.
func (c *Client) goLocked(fn func()) {
	if c.lostErr != nil {
		return
	}
	c.reqs.Add(1)
	go func() {
		defer c.reqs.Done()
		fn()
	}()
}

// turnStream buffers a turn's events until its Turn consumes them.
type turnStream struct {
	events   []Event
	bytes    int64 // raw params of events
	err      error // set when delivery stopped (*TurnStreamError)
	attached bool
	notify   chan struct{} // closed and replaced on every change
}

// popLocked removes and returns the oldest buffered event.
func (s *turnStream) popLocked() Event {
	ev := s.events[0]
	s.events[0] = nil
	s.events = s.events[1:]
	s.bytes -= int64(len(ev.Meta().Params))
	return ev
}

func (s *turnStream) wakeLocked() {
	close(s.notify)
	s.notify = make(chan struct{})
}
