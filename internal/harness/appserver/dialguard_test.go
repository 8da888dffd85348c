package appserver_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

// An external server is named by a user: whatever it answers to a refused or
// broken upgrade must not reach an error (which becomes conditions, Events
// and dispatcher answers). The real Codex cannot be made to answer with an
// arbitrary body or a broken 101, so these servers are hand-written.
func TestDialWebSocketNeverCopiesWhatTheServerSent(t *testing.T) {
	t.Parallel()
	const marker = "INJECTED-BY-SERVER"
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, marker+" please visit http://phish.example", http.StatusForbidden)
	}))
	defer refusing.Close()
	brokenUpgrade := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer func() { _ = conn.Close() }()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: " + marker + "\r\n\r\n")
		_ = rw.Flush()
	}))
	defer brokenUpgrade.Close()

	for name, srv := range map[string]*httptest.Server{"a refused upgrade (403 with a body)": refusing, "a 101 with invalid headers": brokenUpgrade} {
		_, err := appserver.DialWebSocket(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), appserver.WebSocketOptions{Token: "s3cret-token"})
		if err == nil {
			t.Fatalf("%s: dial succeeded", name)
		}
		if strings.Contains(err.Error(), marker) {
			t.Errorf("%s: the error copies what the server sent: %v", name, err)
		}
	}
	_, err := appserver.DialWebSocket(context.Background(), "ws"+strings.TrimPrefix(refusing.URL, "http"), appserver.WebSocketOptions{Token: "s3cret-token"})
	var he *appserver.HandshakeError
	if !errors.As(err, &he) || he.StatusCode != http.StatusForbidden {
		t.Errorf("a refused upgrade: %v, want a HandshakeError with its status (403)", err)
	}
}

// The Dialer option dials through a netguard policy: a refused address
// fails with the policy's error, naming the address and rule, before the
// server sees a connection; the same dial with the address admitted reaches
// it (the control).
func TestDialWebSocketThroughAGuardedDialer(t *testing.T) {
	t.Parallel()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	wsURL := "ws" + strings.TrimPrefix(srv.URL, "http")
	addr := strings.TrimPrefix(srv.URL, "http://")

	_, err := appserver.DialWebSocket(context.Background(), wsURL, appserver.WebSocketOptions{Dialer: netguard.Policy{}.Dialer(nil)})
	var refused *netguard.RefusedError
	if !errors.As(err, &refused) || refused.Address != addr || refused.Rule != netguard.RuleLoopback {
		t.Fatalf("dial to loopback under the default policy: %v, want a refusal of %s by rule loopback", err, addr)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("the server saw %d connections of a refused dial", n)
	}

	_, err = appserver.DialWebSocket(context.Background(), wsURL, appserver.WebSocketOptions{Dialer: netguard.Policy{AllowLoopback: true}.Dialer(nil)})
	if !errors.Is(err, appserver.ErrUnauthorized) {
		t.Fatalf("control: dial with loopback allowed: %v, want the server's 401", err)
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("control: the server saw %d connections, want 1", n)
	}
}
