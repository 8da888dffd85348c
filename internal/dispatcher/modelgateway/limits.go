package modelgateway

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/openclaw/harness-operator/internal/platform/connlimit"
)

// Limits bound what a client or an upstream can hold of the gateway. A
// zero field takes its default (DefaultLimits); a negative one is refused
// by New, naming it.
//
// Three of them are the server's and the listener's, not the handler's:
// HeaderTimeout, MaxHeaderBytes and IdleTimeout take effect only on the
// http.Server that Gateway.Server returns, MaxConnections only on the
// listener Gateway.Listener wraps. The subcommand serves through both.
type Limits struct {
	// MaxBodyBytes bounds a request body (64 MiB; Codex re-sends the whole
	// history, about 26 KB for a first turn). Over it: 413.
	MaxBodyBytes int64
	// HeaderTimeout is the time a client has to send its request headers
	// (10 s): http.Server.ReadHeaderTimeout.
	HeaderTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (64 KiB; a credential is
	// at most 12 KiB): http.Server.MaxHeaderBytes. Over it: 431.
	MaxHeaderBytes int
	// IdleTimeout closes a keep-alive connection that waits this long for
	// its next request (120 s, as the dispatcher's API):
	// http.Server.IdleTimeout.
	IdleTimeout time.Duration
	// MaxConnections bounds the connections open at once (1,024): one over
	// it is closed as soon as it is accepted (Gateway.Listener).
	MaxConnections int
	// MaxInFlightPerLease bounds the requests in flight under one lease,
	// one session's turn or calls (8): one session cannot take every
	// upstream connection. Over it: 429.
	MaxInFlightPerLease int
	// UpstreamHeaderTimeout is the time from sending a request upstream to
	// its response headers (120 s). Over it: 504.
	UpstreamHeaderTimeout time.Duration
	// UpstreamIdleTimeout is the longest wait for the next bytes of an
	// upstream's answer (300 s, Codex's own stream_idle_timeout). Over it
	// the stream is cut.
	UpstreamIdleTimeout time.Duration
	// MaxEventBytes bounds one server-sent event of an answer, the bytes
	// up to a blank line (16 MiB). Over it the stream is cut. It applies to
	// every answer, so an endless body without blank lines is cut too.
	MaxEventBytes int64
	// WriteTimeout bounds each write to the client (30 s): a client that
	// stops reading is cut off, and the upstream feels the back-pressure
	// rather than the gateway's memory.
	WriteTimeout time.Duration
}

// copyBufferBytes is the one buffer an answer passes through: the gateway
// buffers nothing else of it.
const copyBufferBytes = 32 << 10

// DefaultLimits are the limits of docs/design/model-gateway.md, section 3.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:          64 << 20,
		HeaderTimeout:         10 * time.Second,
		MaxHeaderBytes:        64 << 10,
		IdleTimeout:           120 * time.Second,
		MaxConnections:        1024,
		MaxInFlightPerLease:   8,
		UpstreamHeaderTimeout: 120 * time.Second,
		UpstreamIdleTimeout:   300 * time.Second,
		MaxEventBytes:         16 << 20,
		WriteTimeout:          30 * time.Second,
	}
}

// withDefaults fills the zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	def := func(v *int64, dv int64) {
		if *v == 0 {
			*v = dv
		}
	}
	defInt := func(v *int, dv int) {
		if *v == 0 {
			*v = dv
		}
	}
	defDur := func(v *time.Duration, dv time.Duration) {
		if *v == 0 {
			*v = dv
		}
	}
	def(&l.MaxBodyBytes, d.MaxBodyBytes)
	def(&l.MaxEventBytes, d.MaxEventBytes)
	defInt(&l.MaxHeaderBytes, d.MaxHeaderBytes)
	defInt(&l.MaxConnections, d.MaxConnections)
	defInt(&l.MaxInFlightPerLease, d.MaxInFlightPerLease)
	defDur(&l.HeaderTimeout, d.HeaderTimeout)
	defDur(&l.IdleTimeout, d.IdleTimeout)
	defDur(&l.UpstreamHeaderTimeout, d.UpstreamHeaderTimeout)
	defDur(&l.UpstreamIdleTimeout, d.UpstreamIdleTimeout)
	defDur(&l.WriteTimeout, d.WriteTimeout)
	return l
}

// validate refuses a negative limit, naming it.
func (l Limits) validate() error {
	var errs []error
	neg := func(name string, negative bool) {
		if negative {
			errs = append(errs, fmt.Errorf("modelgateway: limit %s must not be negative", name))
		}
	}
	neg("MaxBodyBytes", l.MaxBodyBytes < 0)
	neg("HeaderTimeout", l.HeaderTimeout < 0)
	neg("MaxHeaderBytes", l.MaxHeaderBytes < 0)
	neg("IdleTimeout", l.IdleTimeout < 0)
	neg("MaxConnections", l.MaxConnections < 0)
	neg("MaxInFlightPerLease", l.MaxInFlightPerLease < 0)
	neg("UpstreamHeaderTimeout", l.UpstreamHeaderTimeout < 0)
	neg("UpstreamIdleTimeout", l.UpstreamIdleTimeout < 0)
	neg("MaxEventBytes", l.MaxEventBytes < 0)
	neg("WriteTimeout", l.WriteTimeout < 0)
	return errors.Join(errs...)
}

// Server returns the http.Server the gateway is served with: g as its
// handler, with the header limits and the keep-alive idle timeout. The
// caller adds TLS and serves it on Listener's listener. There is no
// whole-request timeout: an answer streams as long as the upstream sends.
func (g *Gateway) Server() *http.Server {
	return &http.Server{
		Handler:           g,
		ReadHeaderTimeout: g.limits.HeaderTimeout,
		MaxHeaderBytes:    g.limits.MaxHeaderBytes,
		IdleTimeout:       g.limits.IdleTimeout,
	}
}

// Listener wraps l so that at most Limits.MaxConnections connections are
// open at once: a connection over it is closed as soon as it is accepted,
// and counted (harness_model_gateway_connections_refused_total). A flood
// of idle connections cannot hold the gateway's descriptors and memory,
// and the extra connections see their end rather than wait unseen in the
// kernel's backlog.
func (g *Gateway) Listener(l net.Listener) net.Listener {
	return connlimit.Listener(l, g.limits.MaxConnections, g.metrics.connectionsRefused.Inc)
}

// inFlight counts the requests in flight per lease.
type inFlight struct {
	max int
	mu  sync.Mutex
	n   map[string]int
}

func newInFlight(limit int) *inFlight { return &inFlight{max: limit, n: map[string]int{}} }

// take gives lease a place, if it has fewer than max; release gives it
// back (once).
func (f *inFlight) take(lease string) (release func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[lease] >= f.max {
		return nil, false
	}
	f.n[lease]++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.n[lease]--; f.n[lease] == 0 {
				delete(f.n, lease)
			}
		})
	}, true
}

// eventScanner measures the server-sent event being streamed: the bytes
// since the last blank line. Lines end with "\r\n", "\n" or "\r"; an event
// ends with an empty line.
type eventScanner struct {
	max int64
	// size is the current event's bytes so far.
	size int64
	// lineStart: the last byte ended a line, so a line ending now ends the
	// event.
	lineStart bool
	// afterCR: the last byte was '\r', so a '\n' now completes its "\r\n".
	afterCR bool
}

// feed scans p and reports whether an event in it, or the one it
// continues, goes over max.
func (s *eventScanner) feed(p []byte) (over bool) {
	for _, b := range p {
		switch {
		case b == '\n' && s.afterCR:
			// The rest of a "\r\n": the '\r' counted for the line end.
			s.afterCR = false
			continue
		case b == '\r' || b == '\n':
			if s.lineStart {
				// The blank line ends the event.
				s.size, s.lineStart, s.afterCR = 0, false, b == '\r'
				continue
			}
			s.lineStart, s.afterCR = true, b == '\r'
			s.size++
		default:
			s.lineStart, s.afterCR = false, false
			s.size++
		}
		if s.size > s.max {
			return true
		}
	}
	return false
}
