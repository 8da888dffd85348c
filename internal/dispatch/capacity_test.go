package dispatch

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/journal"
	"github.com/openclaw/harness-operator/internal/wire"
)

// Sessions racing for the last places of a pod never take it past
// maxSessionsPerReplica: the place is reserved atomically in the store, and
// a session bound there keeps its own place whatever the count.
func TestMaxSessionsPerReplicaHoldsUnderARace(t *testing.T) {
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j.Close() }()
	e := New(nil, nil, j, Options{})
	defer e.Close()
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "codex"},
		Spec:       v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{MaxSessionsPerReplica: ptr.To[int32](2)}},
	}
	srv := Server{Name: "codex-app-server-0"}
	session := func(i int) *v1alpha1.AgentSession {
		return &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: fmt.Sprintf("s%d", i),
			UID: k8stypes.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))}}
	}

	const racers = 16
	var wg sync.WaitGroup
	results := make([]*wire.Error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = e.reserve(context.Background(), session(i), &prepared{harness: h, session: SessionKey(session(i))}, srv)
		}()
	}
	wg.Wait()
	placed := 0
	for i, r := range results {
		switch {
		case r == nil:
			placed++
		case r.Code != wire.CodeHarnessAtCapacity:
			t.Fatalf("racer %d: %v, want HarnessAtCapacity", i, r)
		}
	}
	if n, _ := j.Reserved(context.Background(), serverKey(h, srv.Name)); placed != 2 || n != 2 {
		t.Fatalf("%d sessions were placed and the pod holds %d, want 2 (maxSessionsPerReplica)", placed, n)
	}

	// A session bound to the full pod keeps its place.
	bound := session(racers)
	bound.Status.NativeBinding = &v1alpha1.NativeBinding{ThreadID: "t", Pod: srv.Name, HarnessNamespace: h.Namespace, HarnessName: h.Name}
	if r := e.reserve(context.Background(), bound, &prepared{harness: h, session: SessionKey(bound)}, srv); r != nil {
		t.Fatalf("a session bound to the pod was refused its own place: %v", r)
	}
}
