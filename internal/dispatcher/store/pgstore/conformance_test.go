//go:build postgres

package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/pgstore"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
	"github.com/openclaw/harness-operator/internal/testutil/storetest"
)

// TestMain runs the package's tests on one PostgreSQL server (a database
// per test) and fails the run when a goroutine outlives them.
func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestStoreConformance runs the store contract's suite against PostgreSQL:
// one database per storage name, shared by the Stores open on it, as the
// dispatchers sharing one database do.
func TestStoreConformance(t *testing.T) {
	srv := pgtest.Shared(t)
	dbs := map[string]string{} // test name and storage → connection string
	storetest.Run(t, storetest.Opener{Shared: true, Open: func(t *testing.T, storage string, cfg storetest.Config) store.Store {
		key := t.Name() + "\x00" + storage
		if dbs[key] == "" {
			dbs[key] = srv.NewDatabase(t)
		}
		st, err := pgstore.Open(context.Background(), dbs[key], pgstore.Options{
			Clock: cfg.Clock,
			// The suite steps its clock to expire leases; a dispatcher
			// measures expiry on the database's clock instead.
			LeaseClock:         cfg.Clock,
			MaxAge:             orNoLimit(cfg.MaxAge),
			MaxRuns:            orNoLimit(cfg.MaxRuns),
			MaxNamespaceRuns:   orNoLimit(cfg.MaxNamespaceRuns),
			MaxTranscriptBytes: orNoLimit(cfg.MaxTranscriptBytes),
		})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}})
}

// orNoLimit maps the suite's "zero: no limit" to the store's (negative;
// zero is its default).
func orNoLimit[T ~int | ~int64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}
