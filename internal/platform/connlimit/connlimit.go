// Package connlimit caps the connections a server holds open at once. A
// connection accepted over the cap is closed at once and counted: a flood
// of idle connections cannot hold a server's file descriptors and memory,
// and its extra connections see their end rather than wait unseen in the
// kernel's backlog (as with netutil.LimitListener, which stops accepting).
package connlimit

import (
	"net"
	"sync"
	"sync/atomic"
)

// Listener wraps l so that at most max connections are open at once; each
// one over it is closed as soon as it is accepted, after refused (nil:
// nothing) is called.
func Listener(l net.Listener, max int, refused func()) net.Listener {
	if refused == nil {
		refused = func() {}
	}
	return &capListener{Listener: l, max: int64(max), refused: refused}
}

type capListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	refused func()
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.refused()
			_ = c.Close()
			continue
		}
		return &cappedConn{Conn: c, release: func() { l.open.Add(-1) }}, nil
	}
}

// cappedConn gives its place back once, at its first Close.
type cappedConn struct {
	net.Conn
	release func()
	once    sync.Once
}

func (c *cappedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
