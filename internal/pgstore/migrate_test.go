//go:build postgres

package pgstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/pgstore"
	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

// TestDispatchersStartingTogetherMigrateOnce: replicas opening one empty
// database at the same moment all start, and the schema is migrated once —
// each version recorded once, its tables created by one of them.
func TestDispatchersStartingTogetherMigrateOnce(t *testing.T) {
	db := pgtest.Shared(t).NewDatabase(t)
	const replicas = 4
	errs := make([]error, replicas)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			<-start
			st, err := pgstore.Open(context.Background(), db, pgstore.Options{})
			if err == nil {
				err = st.Close()
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: Open: %v", i, err)
		}
	}
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var versions, applied int
	if err := conn.QueryRow(context.Background(), "SELECT count(*), count(DISTINCT version) FROM schema_migrations").Scan(&applied, &versions); err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	if versions == 0 || applied != versions {
		t.Fatalf("schema_migrations holds %d rows for %d versions, want each version applied once", applied, versions)
	}
}
