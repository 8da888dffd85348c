package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgconn"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
)

// The connection string is a secret: it is read from its Secret once, and
// neither it nor its password reaches a log line or an error. pgx redacts
// the password from what it reports on a best-effort basis (not from every
// malformed string), so a string that does not parse is reported without
// pgx's words, and an error of opening the store is reported with the
// password and the string removed, naming the server.

const (
	// postgresOpenTimeout bounds connecting and migrating at start: an
	// unreachable server fails the start instead of hanging it.
	postgresOpenTimeout = 30 * time.Second
	// pingTimeout bounds the store's readiness check.
	pingTimeout = 5 * time.Second
)

// openPostgres opens the PostgreSQL store of the Secret --postgres-secret-name.
func openPostgres(ctx context.Context, c client.Reader, opts options, log logr.Logger) (*openedStore, error) {
	owner, err := podOwner(os.Getenv)
	if err != nil {
		return nil, err
	}
	uri, ref, err := opts.store.connString(ctx, c, opts.leaderElectionNS)
	if err != nil {
		return nil, err
	}
	cfg, err := pgconn.ParseConfig(uri)
	if err != nil {
		return nil, fmt.Errorf("the connection string in key %q of Secret %s (--postgres-secret-name, --postgres-secret-key) does not parse "+
			"(pgx's reason is withheld: it may quote the password); want a URI postgres://user:password@host:5432/dbname?sslmode=verify-full or key=value pairs",
			opts.store.secretKey, ref)
	}
	server := net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	octx, cancel := context.WithTimeout(ctx, postgresOpenTimeout)
	defer cancel()
	pg, err := pgstore.Open(octx, uri, pgstore.Options{
		MaxAge: opts.retention.maxAge, MaxNamespaceRuns: opts.retention.maxNamespaceRuns,
	})
	if err != nil {
		// A new error, not a wrapped one: the chain below may carry the
		// secret in a form redact does not see.
		return nil, fmt.Errorf("open the PostgreSQL store at %s (Secret %s, --postgres-secret-name): %s",
			server, ref, redact(err.Error(), uri, cfg.Password))
	}
	log.Info("PostgreSQL store opened", "server", server, "database", cfg.Database, "secret", ref.String(), "owner", owner)
	if opts.retention.maxNamespaceBytes > 0 {
		log.Info("--journal-max-namespace-bytes is not applied by the PostgreSQL store (docs/dispatcher-store.md)")
	}
	return &openedStore{
		Store:  pg,
		owner:  owner,
		shared: true,
		ready: map[string]healthz.Checker{"postgres": func(r *http.Request) error {
			pctx, cancel := context.WithTimeout(r.Context(), pingTimeout)
			defer cancel()
			if err := pg.Ping(pctx); err != nil {
				return errors.New(redact(err.Error(), uri, cfg.Password))
			}
			return nil
		}},
		close: func() {
			if err := pg.Close(); err != nil {
				log.Error(err, "close the PostgreSQL store")
			}
		},
	}, nil
}

// redact removes the connection string and its password from msg.
func redact(msg, connString, password string) string {
	msg = strings.ReplaceAll(msg, connString, "<connection string>")
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "xxxxx")
	}
	return msg
}
