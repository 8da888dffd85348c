package appserver

import (
	"context"
	"errors"
	"fmt"
)

// Thread is a Codex thread this client has started or resumed.
type Thread struct {
	// ID is the thread id (also Codex's session id).
	ID string
	// Info is the server's answer to thread/start or thread/resume.
	Info ThreadInfo
	c    *Client
}

// ThreadOptions are client-side settings of a thread.
type ThreadOptions struct {
	// Handlers answer this thread's server requests (nil functions
	// decline). When nil, the client's Options.Handlers apply.
	Handlers *Handlers
}

// StartThread sends thread/start.
func (c *Client) StartThread(ctx context.Context, p ThreadStartParams, opts ThreadOptions) (*Thread, error) {
	wire := struct {
		ThreadStartParams
		Config map[string]any `json:"config,omitempty"`
	}{p, withEffort(p.Config, p.ReasoningEffort)}
	return c.openThread(ctx, MethodThreadStart, wire, "", opts)
}

// ResumeThread sends thread/resume: it loads a thread from CODEX_HOME (after
// a restart) or rejoins a running one (after a reconnect), and subscribes
// this connection to its events, including the rest of a running turn
// (attach with Thread.AttachTurn).
func (c *Client) ResumeThread(ctx context.Context, p ThreadResumeParams, opts ThreadOptions) (*Thread, error) {
	if p.ThreadID == "" {
		return nil, errNoThread
	}
	wire := struct {
		ThreadResumeParams
		Config map[string]any `json:"config,omitempty"`
	}{p, withEffort(p.Config, p.ReasoningEffort)}
	return c.openThread(ctx, MethodThreadResume, wire, p.ThreadID, opts)
}

func (c *Client) openThread(ctx context.Context, method string, params any, threadID string, opts ThreadOptions) (*Thread, error) {
	if threadID != "" {
		// Open before the request: a resumed running turn may send events
		// or call a tool right away.
		c.openThreadState(threadID, opts.Handlers)
	}
	var info ThreadInfo
	if err := c.call(ctx, method, params, &info, threadID, ""); err != nil {
		return nil, err
	}
	info.ID = info.Thread.ID
	if info.ID == "" {
		return nil, fmt.Errorf("appserver: %s: answer without thread id", method)
	}
	c.openThreadState(info.ID, opts.Handlers)
	return &Thread{ID: info.ID, Info: info, c: c}, nil
}

// openThreadState makes the client deliver the thread's events (events of
// threads it has not opened are dropped) and sets its handlers, if h is not
// nil.
func (c *Client) openThreadState(threadID string, h *Handlers) {
	c.mu.Lock()
	defer c.mu.Unlock()
	th := c.threadLocked(threadID)
	if h != nil {
		cp := *h
		th.handlers = &cp
	}
}

// SetHandlers replaces the thread's server-request handlers, e.g. before a
// turn that offers different tools.
func (th *Thread) SetHandlers(h Handlers) { th.c.openThreadState(th.ID, &h) }

// StartTurn sends turn/start and returns the running turn. An error that
// satisfies MayHaveSideEffects means the turn may have started anyway.
func (th *Thread) StartTurn(ctx context.Context, p TurnStartParams) (*Turn, error) {
	wire := struct {
		ThreadID string `json:"threadId"`
		TurnStartParams
	}{th.ID, p}
	var res struct {
		Turn TurnInfo `json:"turn"`
	}
	if err := th.c.call(ctx, MethodTurnStart, wire, &res, th.ID, ""); err != nil {
		return nil, err
	}
	if res.Turn.ID == "" {
		return nil, &ConnectionLostError{Method: MethodTurnStart, ThreadID: th.ID, AfterTurnStarted: true,
			Err: fmt.Errorf("turn/start answer without turn id")}
	}
	return th.AttachTurn(res.Turn.ID), nil
}

// AttachTurn returns a handle for a turn of this thread that is already
// running (e.g. after a reconnect and thread/resume). Events that arrived
// before the call are delivered too.
func (th *Thread) AttachTurn(turnID string) *Turn {
	th.c.mu.Lock()
	defer th.c.mu.Unlock()
	s := th.c.streamLocked(th.ID, turnID)
	s.attached = true
	return &Turn{ID: turnID, ThreadID: th.ID, c: th.c, s: s}
}

// Release forgets the thread's buffered events and handlers on this client;
// its later events are dropped (until it is opened or attached again).
func (th *Thread) Release() {
	th.c.mu.Lock()
	defer th.c.mu.Unlock()
	delete(th.c.threads, th.ID)
}

// Turn is a running turn. Its events are consumed by one goroutine with
// Next, Run or Wait; Interrupt may be called from any goroutine.
type Turn struct {
	ID       string
	ThreadID string
	c        *Client
	s        *turnStream
	finished bool
}

// Next returns the turn's next event. After the TurnCompletedEvent it
// returns ErrTurnDone. When the connection ends first it returns a
// *ConnectionLostError with AfterTurnStarted set: the turn may still be
// running on the server. When the client stopped delivering the turn's
// events (an unread limit, a panicking handler) it returns a
// *TurnStreamError.
func (t *Turn) Next(ctx context.Context) (Event, error) {
	for {
		t.c.mu.Lock()
		if t.finished {
			t.c.mu.Unlock()
			return nil, ErrTurnDone
		}
		if len(t.s.events) > 0 {
			ev := t.s.popLocked()
			if _, ok := ev.(TurnCompletedEvent); ok {
				t.finished = true
				t.c.dropStreamLocked(t.ThreadID, t.ID)
			}
			t.c.mu.Unlock()
			return ev, nil
		}
		if err := t.s.err; err != nil {
			t.c.mu.Unlock()
			return nil, err
		}
		if cause := t.c.lostErr; cause != nil {
			t.c.mu.Unlock()
			return nil, &ConnectionLostError{ThreadID: t.ThreadID, TurnID: t.ID, AfterTurnStarted: true, Err: cause}
		}
		wait := t.s.notify
		t.c.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("appserver: waiting for turn %s: %w", t.ID, ctx.Err())
		}
	}
}

// Run consumes the turn's events until it completes, calling fn (if not
// nil) for each on the caller's goroutine, and summarizes the turn. The
// result is returned with the error too, holding what was seen so far.
func (t *Turn) Run(ctx context.Context, fn func(Event)) (*TurnResult, error) {
	res := &TurnResult{TurnID: t.ID}
	for {
		ev, err := t.Next(ctx)
		if errors.Is(err, ErrTurnDone) {
			return res, nil
		}
		if err != nil {
			return res, err
		}
		res.add(ev)
		if fn != nil {
			fn(ev)
		}
		if _, ok := ev.(TurnCompletedEvent); ok {
			return res, nil
		}
	}
}

// Wait is Run without a callback.
func (t *Turn) Wait(ctx context.Context) (*TurnResult, error) { return t.Run(ctx, nil) }

// Interrupt sends turn/interrupt. The turn then completes with status
// interrupted (consume it with Next/Wait).
func (t *Turn) Interrupt(ctx context.Context) error {
	return t.c.call(ctx, MethodTurnInterrupt, map[string]string{"threadId": t.ThreadID, "turnId": t.ID}, nil, t.ThreadID, t.ID)
}
