package testutil

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// CutProxy is a TCP proxy on 127.0.0.1 whose open connections a test can
// cut all at once — as a network fault or a restarted load balancer does —
// while it goes on accepting new ones.
type CutProxy struct {
	l      net.Listener
	target string

	mu    sync.Mutex
	conns map[net.Conn]net.Conn // client → server, while both are open
	done  sync.WaitGroup
	// fromClients counts the bytes forwarded from clients to the target.
	fromClients atomic.Int64
}

// FromClients is how many bytes clients have sent through the proxy: a test
// waits for it to grow to know a request is on its way.
func (p *CutProxy) FromClients() int64 { return p.fromClients.Load() }

// StartCutProxy forwards connections to target until Close.
func StartCutProxy(target string) (*CutProxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &CutProxy{l: l, target: target, conns: map[net.Conn]net.Conn{}}
	p.done.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *CutProxy) Addr() string { return p.l.Addr().String() }

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
	err := p.l.Close()
	p.Cut()
	p.done.Wait()
	return err
}

func (p *CutProxy) accept() {
	for {
		client, err := p.l.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
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
