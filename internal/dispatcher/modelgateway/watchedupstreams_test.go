package modelgateway

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
	"github.com/openclaw/harness-operator/internal/testutil"
)

// countingReader counts the reads that reach the API server.
type countingReader struct {
	client.Reader
	gets atomic.Int64
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

// refusingWatcher is a client without watch permission.
type refusingWatcher struct {
	client.WithWatch
	tries atomic.Int64
}

func (r *refusingWatcher) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	r.tries.Add(1)
	return nil, apierrors.NewForbidden(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "agentharnesses"}, "", errors.New("cannot watch"))
}

// TestWatchedUpstreams runs against a real API server: a harness's
// upstream is read once and served from the cache while nothing changes;
// a rotated key, a changed spec and a deleted harness are each seen by the
// first request after their watch event (and the deleted harness is
// refused, never served); without watch permission every request reads.
func TestWatchedUpstreams(t *testing.T) {
	env, err := testutil.StartEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := env.Client
	watcher, err := client.NewWithWatch(env.Config, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "modelgateway-"}}
	if err := c.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	reads := &countingReader{Reader: c}
	ups := NewWatchedUpstreams(reads, watcher, logr.Discard())
	t.Cleanup(ups.Close)

	secret := kubeSecret(ctx, t, c, ns, "provider", map[string]string{"api-key": "sk-first"})
	h := kubeHarness(ctx, t, c, ns, "codex", gatewaySpec("provider", "api-key"))
	credential := func(h modelcred.Harness) string {
		t.Helper()
		u, err := ups.Upstream(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		return u.Credential
	}

	if got := credential(h); got != "sk-first" {
		t.Fatalf("first request: credential %q, want sk-first", got)
	}
	eventually(t, "the harness's upstream kept", func() bool { return ups.cached(h) })
	before := reads.gets.Load()
	for range 5 {
		if got := credential(h); got != "sk-first" {
			t.Fatalf("a request while nothing changed: credential %q, want sk-first", got)
		}
	}
	if n := reads.gets.Load() - before; n != 0 {
		t.Fatalf("five requests while nothing changed read the API server %d times, want 0", n)
	}

	t.Run("a rotated key: the first request after the Secret's watch event has it", func(t *testing.T) {
		secret.StringData = map[string]string{"api-key": "sk-second"}
		if err := c.Update(ctx, secret); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the Secret's change dropping the entry", func() bool { return !ups.cached(h) })
		if got := credential(h); got != "sk-second" {
			t.Fatalf("after the Secret changed: credential %q, want sk-second", got)
		}
	})

	t.Run("a changed spec: the first request after the harness's watch event has it", func(t *testing.T) {
		eventually(t, "the upstream kept again", func() bool { return ups.cached(h) })
		var ah v1alpha1.AgentHarness
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: h.Name}, &ah); err != nil {
			t.Fatal(err)
		}
		ah.Spec.ModelGateway.Headers = map[string]string{"X-Org": "team-b"}
		if err := c.Update(ctx, &ah); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the harness's change dropping the entry", func() bool { return !ups.cached(h) })
		if u, err := ups.Upstream(ctx, h); err != nil || u.Headers["X-Org"] != "team-b" {
			t.Fatalf("after the spec changed: %v %v, want X-Org team-b", u.Headers, err)
		}
	})

	t.Run("a deleted harness is refused after its watch event, never served", func(t *testing.T) {
		eventually(t, "the upstream kept again", func() bool { return ups.cached(h) })
		if err := c.Delete(ctx, &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: h.Name}}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the deletion dropping the entry", func() bool { return !ups.cached(h) })
		for range 2 {
			if u, err := ups.Upstream(ctx, h); err == nil || !strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("a deleted harness: %v, %v; want a refusal naming it", u.BaseURL, err)
			}
		}
		if ups.cached(h) {
			t.Fatal("a refusal was kept")
		}
	})

	t.Run("without watch permission every request reads, and no watch is tried again", func(t *testing.T) {
		kubeSecret(ctx, t, c, ns, "other", map[string]string{"api-key": "sk-other"})
		other := kubeHarness(ctx, t, c, ns, "other", gatewaySpec("other", "api-key"))
		reads, refusing := &countingReader{Reader: c}, &refusingWatcher{WithWatch: watcher}
		ups := NewWatchedUpstreams(reads, refusing, logr.Discard())
		t.Cleanup(ups.Close)
		for range 3 {
			if u, err := ups.Upstream(ctx, other); err != nil || u.Credential != "sk-other" {
				t.Fatalf("without watches: %v, want the credential", err)
			}
		}
		if n := reads.gets.Load(); n != 6 || ups.cached(other) {
			t.Fatalf("three requests without watches read %d times (kept: %v), want 6 reads and nothing kept", n, ups.cached(other))
		}
		if n := refusing.tries.Load(); n != 1 {
			t.Fatalf("three requests tried %d forbidden watches, want 1", n)
		}
	})
}
