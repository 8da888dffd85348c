package httpapi

import (
	"errors"
	"net/http"
	"time"
)

// deadlineWriter writes a streamed answer to the client with a deadline on
// every write: a client that stops reading fills the connection's buffers,
// the next write fails once the deadline passes, and the handler ends
// instead of waiting for that client forever.
type deadlineWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	wait time.Duration
	// armedNow says the last write set the deadline and nothing waited
	// since: a flush right after it needs no new one.
	armedNow bool
}

func (h *Handler) deadlineWriter(w http.ResponseWriter) *deadlineWriter {
	return &deadlineWriter{w: w, rc: http.NewResponseController(w), wait: h.writeWait}
}

// arm sets the deadline of the next write. A ResponseWriter that cannot have
// one (not a network connection) is written without.
func (d *deadlineWriter) arm() error {
	if err := d.rc.SetWriteDeadline(time.Now().Add(d.wait)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

func (d *deadlineWriter) write(p []byte) (int, error) {
	d.armedNow = false
	if err := d.arm(); err != nil {
		return 0, err
	}
	d.armedNow = true
	return d.w.Write(p)
}

// flush sends what was written so far, the headers included. Called right
// after a write, it keeps that write's deadline.
func (d *deadlineWriter) flush() error {
	armed := d.armedNow
	d.armedNow = false
	if !armed {
		if err := d.arm(); err != nil {
			return err
		}
	}
	if err := d.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// writeFlush writes p and sends it.
func (d *deadlineWriter) writeFlush(p []byte) error {
	if _, err := d.write(p); err != nil {
		return err
	}
	return d.flush()
}

// lazyBody writes the transcript's 200 status and headers with its first
// bytes.
type lazyBody struct {
	w       http.ResponseWriter
	out     *deadlineWriter
	started bool
}

func (b *lazyBody) start() {
	b.started = true
	b.w.Header().Set("Content-Type", "application/x-ndjson")
	b.w.WriteHeader(http.StatusOK)
}

func (b *lazyBody) Write(p []byte) (int, error) {
	if !b.started {
		b.start()
	}
	return b.out.write(p)
}
