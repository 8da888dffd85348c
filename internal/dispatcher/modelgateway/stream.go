package modelgateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Streaming the upstream's answer back: each read written and flushed
// within its deadline, the event limit, and cutting a stream.

// stream copies the answer's body to the client through one buffer,
// flushing after every read, within the idle, event and write limits. A
// limit that is hit cuts the answer: the connection ends without the
// body's proper end, so the client sees a broken stream, not a short one.
func (g *Gateway) stream(ctx context.Context, x *exchange, body io.Reader, out *deadlineWriter, cancel context.CancelCauseFunc) {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	idle := time.AfterFunc(g.limits.UpstreamIdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()
	events := eventScanner{max: g.limits.MaxEventBytes}
	for {
		n, err := body.Read(*buf)
		// The idle limit is the upstream's: it does not run while the
		// client takes its time (the write limit's).
		idle.Stop()
		if n > 0 {
			if events.feed((*buf)[:n]) {
				g.cut(x, cutEventTooLarge, fmt.Sprintf("an event of the answer is larger than the event limit of %d bytes", g.limits.MaxEventBytes), nil)
			}
			if err := out.writeFlush((*buf)[:n]); err != nil {
				g.cut(x, cutClientWrite, fmt.Sprintf("a write to the client failed or took longer than the write limit of %s", g.limits.WriteTimeout), err)
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return
		case err != nil && errors.Is(context.Cause(ctx), errIdle):
			g.cut(x, cutUpstreamIdle, fmt.Sprintf("the upstream sent nothing for the upstream idle limit of %s", g.limits.UpstreamIdleTimeout), nil)
		case err != nil && ctx.Err() != nil:
			g.log.V(1).Info("model request ended: the client went away", x.keyvals()...)
			panic(http.ErrAbortHandler)
		case err != nil:
			g.cut(x, cutUpstreamRead, "the upstream's answer broke off", err)
		}
		idle.Reset(g.limits.UpstreamIdleTimeout)
	}
}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, copyBufferBytes); return &b }}

// cut logs and counts a cut answer, then cuts it.
func (g *Gateway) cut(x *exchange, limit, why string, err error) {
	g.metrics.streamsCut.WithLabelValues(limit).Inc()
	kv := x.keyvals("limit", limit, "reason", why)
	if err != nil {
		kv = append(kv, "error", err.Error())
	}
	g.log.Info("model answer cut", kv...)
	panic(http.ErrAbortHandler)
}

// deadlineWriter writes the answer with a deadline on every write: a
// client that stops reading fills the connection's buffers, and the next
// write fails once the deadline passes.
type deadlineWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	wait time.Duration
}

func (d *deadlineWriter) arm() error {
	if err := d.rc.SetWriteDeadline(time.Now().Add(d.wait)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

func (d *deadlineWriter) flush() error {
	if err := d.arm(); err != nil {
		return err
	}
	if err := d.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// writeFlush writes p and sends it, both within one deadline.
func (d *deadlineWriter) writeFlush(p []byte) error {
	if err := d.arm(); err != nil {
		return err
	}
	if _, err := d.w.Write(p); err != nil {
		return err
	}
	if err := d.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
