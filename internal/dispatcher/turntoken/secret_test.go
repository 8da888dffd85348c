package turntoken

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/openclaw/harness-operator/internal/testutil"
)

var env *testutil.Env

// TestMain runs the tests against a real API server (envtest).
func TestMain(m *testing.M) {
	var err error
	if env, err = testutil.StartEnv(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop envtest:", err)
	}
	os.Exit(code)
}

// newNamespace creates a namespace of its own for a test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "turntoken-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestLoadCreatesTheKeyOnceAndReusesIt: the first dispatcher makes the key
// and keeps it in an immutable Secret; a later one (a restart, another
// replica) loads the same key and accepts the first one's tokens.
func TestLoadCreatesTheKeyOnceAndReusesIt(t *testing.T) {
	ref := types.NamespacedName{Namespace: newNamespace(t), Name: "dispatcher-turn-token"}
	first, err := Load(ctx(t), env.Client, env.Client, ref)
	if err != nil {
		t.Fatalf("first Load: %v", err)
	}
	var s corev1.Secret
	if err := env.Client.Get(ctx(t), ref, &s); err != nil {
		t.Fatalf("the Secret was not created: %v", err)
	}
	if len(s.Data[DataKey]) != KeyBytes || s.Immutable == nil || !*s.Immutable {
		t.Fatalf("Secret = data[%s] of %d bytes, immutable %v; want %d bytes, immutable", DataKey, len(s.Data[DataKey]), s.Immutable, KeyBytes)
	}
	second, err := Load(ctx(t), env.Client, env.Client, ref)
	if err != nil {
		t.Fatalf("second Load: %v", err)
	}
	if token := first.Sign("team-a/uid-1", "run-1"); !second.Verify("team-a/uid-1", "run-1", token) {
		t.Fatal("a second Load does not accept the first one's token: it has another key")
	}
}

// TestRacingLoadersAgreeOnOneKey: two replicas start together, both find no
// Secret and both create one; the loser reads the winner's key, so both
// sign alike.
func TestRacingLoadersAgreeOnOneKey(t *testing.T) {
	ref := types.NamespacedName{Namespace: newNamespace(t), Name: "dispatcher-turn-token"}
	direct, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	// Both creates start only once both loaders found no Secret.
	var arrived sync.WaitGroup
	arrived.Add(2)
	var created atomic.Int32
	racing := interceptor.NewClient(direct, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			arrived.Done()
			arrived.Wait()
			err := c.Create(ctx, obj, opts...)
			if err == nil {
				created.Add(1)
			}
			return err
		},
	})
	keys := make([]*Key, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = Load(ctx(t), racing, racing, ref) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("loader %d: %v", i, err)
		}
	}
	if n := created.Load(); n != 1 {
		t.Fatalf("%d creates succeeded, want 1 (the race did not happen)", n)
	}
	if token := keys[0].Sign("team-a/uid-1", "run-1"); !keys[1].Verify("team-a/uid-1", "run-1", token) {
		t.Fatal("the racing loaders hold different keys")
	}
}

// TestLoadRefusesADamagedSecret: a Secret whose key is not 32 bytes is
// reported, naming the Secret and its data key, and left alone.
func TestLoadRefusesADamagedSecret(t *testing.T) {
	ref := types.NamespacedName{Namespace: newNamespace(t), Name: "dispatcher-turn-token"}
	bad := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
		Data: map[string][]byte{DataKey: []byte("short")}}
	if err := env.Client.Create(ctx(t), bad); err != nil {
		t.Fatal(err)
	}
	_, err := Load(ctx(t), env.Client, env.Client, ref)
	if err == nil || !strings.Contains(err.Error(), ref.String()) || !strings.Contains(err.Error(), "data["+DataKey+"] is 5 bytes, want 32") {
		t.Fatalf("Load of a damaged Secret: %v, want an error naming %s and data[%s]", err, ref, DataKey)
	}
}
