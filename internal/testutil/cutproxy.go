package testutil

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// CutProxy is a TCP proxy on 127.0.0.1 whose open connections a test can
// cut all at once — as a network fault or a restarted load balancer does —
// while it goes on accepting new ones. It can also stop listening for a
// while (Down, Up), as a Service without endpoints.
type CutProxy struct {
	addr string
	// targets are dialled in order, the first that answers taking the
	// connection, as a Service's endpoints.
	targets []string

	lmu sync.Mutex
	l   net.Listener // nil while Down

	mu    sync.Mutex
	conns map[net.Conn]net.Conn // client → server, while both are open
	done  sync.WaitGroup
	// fromClients counts the bytes forwarded from clients to the target.
	fromClients atomic.Int64
}

// FromClients is how many bytes clients have sent through the proxy: a test
// waits for it to grow to know a request is on its way.
func (p *CutProxy) FromClients() int64 { return p.fromClients.Load() }

// StartCutProxy forwards connections to target (or, when it does not
// answer, to the first of fallbacks that does) until Close.
func StartCutProxy(target string, fallbacks ...string) (*CutProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &CutProxy{addr: l.Addr().String(), l: l, targets: append([]string{target}, fallbacks...), conns: map[net.Conn]net.Conn{}}
	p.done.Go(func() { p.accept(l) })
	return p, nil
}

// Addr is the proxy's host:port.
func (p *CutProxy) Addr() string { return p.addr }

// Cut closes every open connection (both sides) and returns how many
// client connections it cut.
func (p *CutProxy) Cut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.conns)
	for client, server := range p.conns {
		_ = client.Close()
		_ = server.Close()
	}
	clear(p.conns)
	return n
}

// Close stops accepting, cuts every connection and waits for the copies.
func (p *CutProxy) Close() error {
	err := p.Down()
	p.done.Wait()
	return err
}

// Down stops listening (a client's connection is refused) and cuts every
// open connection; Up listens again on the same address.
func (p *CutProxy) Down() error {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	var err error
	if p.l != nil {
		err = p.l.Close()
		p.l = nil
	}
	p.Cut()
	return err
}

// Up listens again on the proxy's address after Down.
func (p *CutProxy) Up() error {
	p.lmu.Lock()
	defer p.lmu.Unlock()
	if p.l != nil {
		return nil
	}
	l, err := net.Listen("tcp", p.addr)
	if err != nil {
		return err
	}
	p.l = l
	p.done.Go(func() { p.accept(l) })
	return nil
}

func (p *CutProxy) accept(l net.Listener) {
	for {
		client, err := l.Accept()
		if err != nil {
			return
		}
		server, err := p.dial()
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		p.conns[client] = server
		p.mu.Unlock()
		p.done.Go(func() { p.pipe(client, server, server, countingReader{client, &p.fromClients}) })
		p.done.Go(func() { p.pipe(client, server, client, server) })
	}
}

// dial connects to the first target that answers.
func (p *CutProxy) dial() (net.Conn, error) {
	var err error
	for _, t := range p.targets {
		var c net.Conn
		if c, err = net.Dial("tcp", t); err == nil {
			return c, nil
		}
	}
	return nil, err
}

// pipe copies src to dst, one direction of the client's connection to
// server; when either side ends, both connections are closed.
func (p *CutProxy) pipe(client, server net.Conn, dst io.Writer, src io.Reader) {
	_, _ = io.Copy(dst, src)
	_ = client.Close()
	_ = server.Close()
	p.mu.Lock()
	delete(p.conns, client)
	p.mu.Unlock()
}

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}
