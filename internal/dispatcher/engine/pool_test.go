package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// A closed pool (the engine shut down) dials nothing: a turn or a reattach
// that asks for a connection afterwards gets an error at once.
func TestClosedPoolDialsNothing(t *testing.T) {
	var p connPool
	p.closeAll()
	dials := 0
	_, err := p.get(context.Background(), "ws://127.0.0.1:1", func(context.Context) (*appserver.Client, error) {
		dials++
		return nil, errors.New("dialed")
	})
	if !errors.Is(err, errPoolClosed) {
		t.Fatalf("get on a closed pool: %v, want errPoolClosed", err)
	}
	if dials != 0 {
		t.Fatalf("a closed pool dialed %d times", dials)
	}
}

// cutConnections closes every pooled connection, as a network cut would; the
// pool stays open, so turns reattach on new connections.
func cutConnections(p *connPool) {
	p.mu.Lock()
	conns := make([]*appserver.Client, 0, len(p.conns))
	for _, c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}
