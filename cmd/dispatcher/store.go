package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// The dispatcher's store (docs/dispatcher-store.md, "Choosing the store"):
// the file journal on a ReadWriteOnce volume (the default: one replica) or
// PostgreSQL (internal/dispatcher/store/pgstore: replicas share one database). Everything
// that differs between them for run() — opening, the owner id its leases
// are held under, readiness, closing — is decided here; the engine, the API
// and retention see only store.Store.

const (
	storeFiles    = "files"
	storePostgres = "postgres"

	// defaultPostgresSecretKey is the key of the connection string in
	// --postgres-secret-name: CloudNativePG's application Secret keeps it
	// under uri.
	defaultPostgresSecretKey = "uri"
	// podNameEnv names the variable (the downward API's metadata.name) that
	// is a PostgreSQL replica's owner id.
	podNameEnv = "POD_NAME"
)

// storeOptions are the flags that choose and locate the store.
type storeOptions struct {
	kind       string // --store
	secretName string // --postgres-secret-name
	secretKey  string // --postgres-secret-key
}

func bindStoreFlags(fs *flag.FlagSet, o *storeOptions) {
	fs.StringVar(&o.kind, "store", storeFiles,
		"Where runs, leases and transcripts are kept: files (the journal in --journal-dir, one replica) or postgres (a database shared by the replicas; connection string from --postgres-secret-name).")
	fs.StringVar(&o.secretName, "postgres-secret-name", "",
		"With --store=postgres: the Secret, in the dispatcher's namespace ($POD_NAMESPACE, then --leader-election-namespace), whose key --postgres-secret-key holds the connection string (read once at start; never logged).")
	fs.StringVar(&o.secretKey, "postgres-secret-key", defaultPostgresSecretKey,
		"With --store=postgres: the key of --postgres-secret-name holding the connection string (a URI postgres://user:password@host:5432/db?sslmode=verify-full, or key=value pairs).")
}

// validate refuses every combination that cannot start, naming the flags.
func (o storeOptions) validate() error {
	switch o.kind {
	case storeFiles:
		if o.secretName != "" {
			return fmt.Errorf("--postgres-secret-name %q is set, but --store is %s: set --store=%s to use PostgreSQL, or drop --postgres-secret-name", o.secretName, storeFiles, storePostgres)
		}
	case storePostgres:
		if o.secretName == "" {
			return errors.New("--store=postgres needs --postgres-secret-name: the Secret in the dispatcher's namespace whose key --postgres-secret-key holds the connection string")
		}
		if o.secretKey == "" {
			return errors.New("--postgres-secret-key must not be empty with --store=postgres")
		}
	default:
		return fmt.Errorf("--store must be %s or %s, got %q", storeFiles, storePostgres, o.kind)
	}
	return nil
}

// openedStore is the store run() serves from, and what run() needs of it
// beyond store.Store.
type openedStore struct {
	store.Store
	// owner is the id the engine holds leases under (engine.Options.Owner):
	// the same for a restarted process of this replica, so its start-up
	// recovery ends what its previous process left at once.
	owner string
	// ready are the store's /readyz checks, by name.
	ready map[string]healthz.Checker
	// shared: many replicas share the store, so every replica serves the
	// API (each session's lease keeps its turns on one at a time, the run's
	// inbox carries answers to the replica running the turn) and sweeps the
	// turns of replicas that died; only the controllers need the leader.
	shared bool
	// close closes the store; run defers it.
	close func()
}

// openStore opens the store opts choose. c reads the PostgreSQL Secret: a
// direct client (the manager does not cache Secrets).
func openStore(ctx context.Context, c client.Reader, opts options, log logr.Logger) (*openedStore, error) {
	if opts.store.kind == storePostgres {
		return openPostgres(ctx, c, opts, log)
	}
	return openJournal(ctx, c, opts, log)
}

// openJournal opens the file journal in --journal-dir.
func openJournal(ctx context.Context, c client.Reader, opts options, log logr.Logger) (*openedStore, error) {
	jopts := opts.retention.journalOptions()
	jopts.ResolveLegacy = sessionUIDs(ctx, c)
	jrnl, err := journal.Open(opts.journalDir, jopts)
	if err != nil {
		return nil, fmt.Errorf("open the journal (--journal-dir %s): %w", opts.journalDir, err)
	}
	rep := jrnl.Recovery()
	log.Info("journal opened", "dir", opts.journalDir, "runs", rep.Runs, "running", rep.Running,
		"tornTails", rep.TornTails, "discarded", len(rep.Discarded), "corrupt", rep.Corrupt, "pruned", rep.Pruned)
	if m := rep.Migrated; len(m.Moved)+len(m.Removed) > 0 {
		log.Info("migrated a journal kept by AgentSession name to UID keys", "moved", m.Moved, "removedGone", m.Removed)
	}
	owner, err := journalOwner(opts.journalDir)
	if err != nil {
		_ = jrnl.Close()
		return nil, err
	}
	spaceOK := journalSpace(opts.journalDir, opts.journalMinFree)
	if err := spaceOK(nil); err != nil {
		log.Error(err, "the journal's volume is nearly full: /readyz fails until there is room")
	}
	var open atomic.Bool
	open.Store(true)
	return &openedStore{
		Store: jrnl,
		owner: owner,
		ready: map[string]healthz.Checker{
			"journal": func(*http.Request) error {
				if !open.Load() {
					return errors.New("the journal is closed")
				}
				return nil
			},
			"journal-space": spaceOK,
		},
		close: func() {
			open.Store(false)
			if err := jrnl.Close(); err != nil {
				log.Error(err, "close the journal")
			}
		},
	}, nil
}

// podOwner is a PostgreSQL replica's owner id: its pod name, which a
// restarted container keeps.
func podOwner(getenv func(string) string) (string, error) {
	if name := getenv(podNameEnv); name != "" {
		return name, nil
	}
	return "", fmt.Errorf("--store=postgres needs $%s, the replica's stable id that its leases are held under: set it from the downward API (fieldRef metadata.name), as the chart does", podNameEnv)
}

// connString reads the connection string from its Secret in the
// dispatcher's namespace. Errors name the Secret and key, never a value.
func (o storeOptions) connString(ctx context.Context, c client.Reader, leaderNS string) (string, types.NamespacedName, error) {
	ns := namespaceOrDefault("", leaderNS)
	if ns == "" {
		return "", types.NamespacedName{}, errors.New("--postgres-secret-name needs the dispatcher's namespace: set $POD_NAMESPACE or --leader-election-namespace (neither is set)")
	}
	ref := types.NamespacedName{Namespace: ns, Name: o.secretName}
	var sec corev1.Secret
	if err := c.Get(ctx, ref, &sec); err != nil {
		return "", ref, fmt.Errorf("read the PostgreSQL connection string from Secret %s (--postgres-secret-name): %w", ref, err)
	}
	v, ok := sec.Data[o.secretKey]
	if !ok {
		keys := make([]string, 0, len(sec.Data))
		for k := range sec.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return "", ref, fmt.Errorf("the Secret %s (--postgres-secret-name) has no key %q (--postgres-secret-key); its keys: %v", ref, o.secretKey, keys)
	}
	if len(v) == 0 {
		return "", ref, fmt.Errorf("the key %q (--postgres-secret-key) of Secret %s (--postgres-secret-name) is empty", o.secretKey, ref)
	}
	return string(v), ref, nil
}

// storeDescription is the store for the start-up log line.
func storeDescription(opts options) []any {
	if opts.store.kind == storePostgres {
		return []any{"store", storePostgres, "postgresSecret", opts.store.secretName}
	}
	return []any{"store", storeFiles, "journalDir", opts.journalDir}
}
