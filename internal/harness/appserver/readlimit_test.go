package appserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// overLimitPeer is a client transport, the scripted peer at its far end,
// and flood, which sends one message larger than any limit (endless where
// the transport allows) and returns once the client has closed the
// connection.
type overLimitPeer struct {
	client appserver.Transport
	peer   *memTransport
	flood  func() error
}

func stdioPeer(t *testing.T) overLimitPeer {
	outR, outW := io.Pipe() // the server's stdout
	inR, inW := io.Pipe()   // the server's stdin
	client := appserver.NewStdioTransport(outR, inW)
	peer := bridge(t, appserver.NewStdioTransport(inR, outW))
	return overLimitPeer{client: client, peer: peer, flood: func() error {
		chunk := []byte(strings.Repeat("x", 32<<10)) // a line that never ends
		for {
			if _, err := outW.Write(chunk); err != nil {
				return err
			}
		}
	}}
}

func webSocketPeer(t *testing.T) overLimitPeer {
	conns := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		conns <- c
	}))
	t.Cleanup(srv.Close)
	client, err := appserver.DialWebSocket(testCtx(t, 10*time.Second), "ws"+strings.TrimPrefix(srv.URL, "http"), appserver.WebSocketOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := <-conns
	c.SetReadLimit(-1)
	peer := bridge(t, wsEnd{c})
	return overLimitPeer{client: client, peer: peer, flood: func() error {
		// One message that never ends, in fragments.
		w, err := c.Writer(context.Background(), websocket.MessageText)
		if err != nil {
			return err
		}
		chunk := []byte(strings.Repeat("x", 32<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
		}
	}}
}

func memPeer(*testing.T) overLimitPeer {
	m := newMem()
	return overLimitPeer{client: m, peer: m, flood: func() error {
		m.send(`{"method":"item/agentMessage/delta","params":{"delta":"` + strings.Repeat("x", 4096) + `"}}`)
		<-m.closed
		return io.ErrClosedPipe
	}}
}

// A message over the read limit ends the connection with an error naming
// the limit, over every transport (a caller's own Transport included), and
// is never read whole: an endless stdio line or WebSocket message ends the
// connection as soon as the limit is passed. The running turn sees the
// connection lost, as after any drop.
func TestMessageOverReadLimitEndsTheConnection(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]func(*testing.T) overLimitPeer{
		"stdio": stdioPeer, "websocket": webSocketPeer, "own transport": memPeer,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := setup(t)
			c := connectPeer(t, p.client, p.peer, appserver.Options{MaxMessageBytes: 1024})
			turn := threadFor(t, c, p.peer).AttachTurn("turn_1")
			flooded := make(chan error, 1)
			go func() { flooded <- p.flood() }()
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the connection is still open while the server sends a message over the read limit")
			}
			var tl *appserver.MessageTooLargeError
			if !errors.As(c.Err(), &tl) || tl.Limit != 1024 || tl.Size <= 1024 ||
				!strings.Contains(c.Err().Error(), "read limit of 1024 bytes (Options.MaxMessageBytes)") {
				t.Fatalf("Err() = %v; want a MessageTooLargeError naming the limit of 1024 bytes and the size", c.Err())
			}
			_, err := next(t, turn)
			var lost *appserver.ConnectionLostError
			if !errors.As(err, &lost) || !lost.AfterTurnStarted || !errors.As(err, &tl) {
				t.Fatalf("the running turn got %v; want a ConnectionLostError caused by the message over the limit", err)
			}
			select {
			case <-flooded: // the client closed its end: the sender's write failed
			case <-time.After(10 * time.Second):
				t.Fatal("the client did not close the connection after the message over the limit")
			}
		})
	}
}
