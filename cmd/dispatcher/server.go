package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/platform/connlimit"
)

// recoverAttempts bounds Engine.Recover's retries at start-up before the
// dispatcher gives up (and is restarted).
const (
	recoverAttempts = 5
	recoverBackoff  = 2 * time.Second
	// streamsAfterDrain is how long the streams of turns interrupted at the
	// end of the grace period get to deliver their end.
	streamsAfterDrain = 15 * time.Second
)

// apiServer is the HTTPS API as a manager runnable. On a store of its own
// it needs leader election, so it starts only once this replica leads; on a
// shared store (everyReplica) every replica serves. It waits for the caches,
// runs Engine.Recover, then serves until the manager stops, when it stops
// accepting and gives running requests (turn streams) grace to finish.
type apiServer struct {
	everyReplica bool
	addr         string
	tls          *servingTLS
	handler      http.Handler
	grace        time.Duration
	cache        cache.Cache
	engine       *engine.Engine
	limits       limitOptions
	log          logr.Logger

	// serving is true while the listener accepts requests.
	serving atomic.Bool
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (s *apiServer) NeedLeaderElection() bool { return !s.everyReplica }

// Start implements manager.Runnable.
func (s *apiServer) Start(ctx context.Context) error {
	if !s.cache.WaitForCacheSync(ctx) {
		return errors.New("API server: the informer caches did not sync")
	}
	// No certificate, no listener: readiness stays false meanwhile.
	tlsConfig, err := s.tls.config(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before a certificate existed
		}
		return fmt.Errorf("API server: serving certificate: %w", err)
	}
	if err := s.recover(ctx); err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("API server: listen on %s: %w", s.addr, err)
	}
	limits := s.limits.withDefaults()
	srv := &http.Server{
		Handler:   s.handler,
		TLSConfig: tlsConfig,
		// ReadTimeout bounds reading the request, body included; net/http
		// lifts the read deadline once the body is read, so a turn stream
		// is not cut by it (WriteTimeout, which would, stays unset: each
		// stream write has its own deadline, httpapi).
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       limits.readTimeout,
		IdleTimeout:       limits.idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:          stdlog.New(logWriter{s.log.WithName("http")}, "", 0),
	}
	served := make(chan error, 1)
	capped := connlimit.Listener(ln, limits.maxConnections, connectionsRefused.Inc)
	go func() { served <- srv.Serve(tls.NewListener(capped, tlsConfig)) }()
	s.serving.Store(true)
	s.log.Info("serving the API", "address", ln.Addr().String())

	select {
	case err := <-served:
		s.serving.Store(false)
		return fmt.Errorf("API server: %w", err)
	case <-ctx.Done():
	}
	s.serving.Store(false)
	s.log.Info("shutting down the API: no new requests; running turns get the grace period", "grace", s.grace.String())
	// The listener closes now; the streams end with their runs. Turns still
	// running when the grace is over are interrupted on their app-servers
	// (Drain) and record their end, which their streams deliver.
	sctx, cancel := context.WithTimeout(context.Background(), s.grace+streamsAfterDrain)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown(sctx) }()
	gctx, gcancel := context.WithTimeout(context.Background(), s.grace)
	defer gcancel()
	if !s.engine.Drain(gctx) {
		s.log.Info("grace period over: the running turns were interrupted")
	}
	if err := <-shutdown; err != nil {
		s.log.Info("closing the remaining connections", "reason", err.Error())
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("API server: %w", err)
	}
	return nil
}

// recover runs Engine.Recover, retrying a few times: its failures are status
// writes to the API server.
func (s *apiServer) recover(ctx context.Context) error {
	var err error
	for attempt := 1; attempt <= recoverAttempts; attempt++ {
		if err = s.engine.Recover(ctx); err == nil {
			return nil
		}
		s.log.Error(err, "start-up recovery failed", "attempt", attempt)
		select {
		case <-ctx.Done():
			return fmt.Errorf("API server: recovery: %w", ctx.Err())
		case <-time.After(recoverBackoff):
		}
	}
	return fmt.Errorf("API server: recovery failed %d times: %w", recoverAttempts, err)
}

// logWriter carries net/http's server errors (TLS handshake failures, …)
// into the structured log at V(1).
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.V(1).Info(strings.TrimSpace(string(p)))
	return len(p), nil
}
