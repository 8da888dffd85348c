//go:build postgres

package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/internal/testutil/pgtest"
)

// replicaEnv is a processEnv whose dispatchers share one PostgreSQL: its
// connection string is in the Secret default/dispatcher-db.
type replicaEnv struct{ *processEnv }

func newReplicaEnv(ctx context.Context, t *testing.T, ns string, sessions ...string) *replicaEnv {
	t.Helper()
	pg := pgtest.Start(t)
	env := newProcessEnv(ctx, t, ns, fixtureOptions{}, sessions...)
	must(t, env.fx.k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "dispatcher-db"},
		Data:       map[string][]byte{"uri": []byte(pg.NewDatabase(t))},
	}))
	return &replicaEnv{env}
}

// start runs a replica on PostgreSQL, sweeping every second.
func (e *replicaEnv) start(name string) *replica {
	e.t.Helper()
	return e.processEnv.start(name, "--store=postgres", "--postgres-secret-name=dispatcher-db", "--sweep-interval=1s")
}
