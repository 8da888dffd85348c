//go:build postgres

package dispatchertest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

// Replicas are Processes whose dispatchers share one PostgreSQL: its
// connection string is in the Secret default/dispatcher-db.
type Replicas struct{ *Processes }

// NewReplicas starts a PostgreSQL and the Processes.
func NewReplicas(ctx context.Context, t *testing.T, ns string, sessions ...string) *Replicas {
	t.Helper()
	pg := pgtest.Start(t)
	env := NewProcesses(ctx, t, ns, Options{}, sessions...)
	must(t, env.Fx.K8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dispatcher-db"},
		Data:       map[string][]byte{"uri": []byte(pg.NewDatabase(t))},
	}))
	return &Replicas{env}
}

// Start runs a replica on PostgreSQL, sweeping every second.
func (e *Replicas) Start(name string) *Replica {
	e.T.Helper()
	return e.Processes.Start(name, "--store=postgres", "--postgres-secret-name=dispatcher-db", "--sweep-interval=1s")
}
