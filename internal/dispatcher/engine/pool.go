package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// errPoolClosed: the engine was closed; nothing is dialed any more.
var errPoolClosed = errors.New("the dispatcher is shutting down: no new app-server connections")

// connPool keeps one app-server connection per server (pod or external
// URL), shared by the turns that run there. A connection that ended is
// replaced on the next get. Once closed it dials nothing, and a connection
// whose dial was under way while it closed is closed, not kept.
type connPool struct {
	mu     sync.Mutex
	conns  map[string]*appserver.Client
	closed bool
}

func alive(c *appserver.Client) bool {
	select {
	case <-c.Done():
		return false
	default:
		return true
	}
}

// get returns the pooled connection for key, dialing one when there is none.
func (p *connPool) get(ctx context.Context, key string, dial func(context.Context) (*appserver.Client, error)) (*appserver.Client, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errPoolClosed
	}
	if c := p.conns[key]; c != nil && alive(c) {
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return nil, errPoolClosed
	}
	if p.conns == nil {
		p.conns = map[string]*appserver.Client{}
	}
	if old := p.conns[key]; old != nil && alive(old) {
		_ = c.Close() // another turn dialed first
		return old, nil
	}
	p.conns[key] = c
	return c, nil
}

// closeAll closes the pooled connections; the pool dials nothing after it.
func (p *connPool) closeAll() {
	p.mu.Lock()
	conns := p.conns
	p.conns, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}
