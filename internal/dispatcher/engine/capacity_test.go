package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// Sessions racing for the last places of a pod never take it past
// maxSessionsPerReplica: the place is reserved atomically in the store, and
// a session bound there keeps its own place whatever the count.
func TestMaxSessionsPerReplicaHoldsUnderARace(t *testing.T) {
	e, j := journalOnlyEngine(t)
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

// One namespace cannot take all of a shared harness's places: its sessions
// on all pods together stop at maxSessionsPerNamespace, with the limit
// named, while another namespace (the control) and the harness's own still
// find places; a refused session holds no place on the pod.
func TestOneNamespaceCannotTakeAllOfASharedHarness(t *testing.T) {
	e, j := journalOnlyEngine(t)
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{
			MaxSessionsPerReplica: ptr.To[int32](10), MaxSessionsPerNamespace: ptr.To[int32](2)}},
	}
	pods := []Server{{Name: "codex-app-server-0"}, {Name: "codex-app-server-1"}}
	n := 0
	place := func(ns string, pod Server) *wire.Error {
		n++
		s := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s%d", n),
			UID: k8stypes.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", n))}}
		return e.reserve(context.Background(), s, &prepared{harness: h, session: SessionKey(s)}, pod)
	}
	for i := range 2 {
		if r := place("team-a", pods[i]); r != nil {
			t.Fatalf("team-a session %d: %v", i, r)
		}
	}
	held, _ := j.Reserved(context.Background(), serverKey(h, pods[0].Name))
	r := place("team-a", pods[0])
	if r == nil || r.Code != wire.CodeHarnessAtCapacity || !strings.Contains(r.Message, "maxSessionsPerNamespace 2") || !strings.Contains(r.Message, "team-a") {
		t.Fatalf("team-a's third session: %v, want HarnessAtCapacity naming maxSessionsPerNamespace 2 and team-a", r)
	}
	if after, _ := j.Reserved(context.Background(), serverKey(h, pods[0].Name)); after != held {
		t.Fatalf("the refused session holds a place on the pod: %d, was %d", after, held)
	}
	if r := place("team-b", pods[0]); r != nil {
		t.Fatalf("control: team-b's first session: %v", r)
	}
	for i := range 3 {
		if r := place("agents", pods[1]); r != nil {
			t.Fatalf("the harness's own namespace, session %d: %v", i, r)
		}
	}
}

// journalOnlyEngine is an engine on a journal of its own and no API server:
// enough for the store reservations capacity.go makes.
func journalOnlyEngine(t *testing.T) (*Engine, *journal.Journal) {
	t.Helper()
	j, err := journal.Open(t.TempDir(), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := New(nil, nil, j, Options{})
	t.Cleanup(func() {
		e.Close()
		_ = j.Close()
	})
	return e, j
}
