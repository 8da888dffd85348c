package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// callSession is an unbound AgentSession of namespace ns with a UID of its own.
func callSession(ns string, i int) *v1alpha1.AgentSession {
	return &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("s%d", i),
		UID: k8stypes.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))}}
}

// placesHarness is a managed harness of namespace agents with two places
// per other namespace and ten per pod.
func placesHarness() *v1alpha1.AgentHarness {
	return &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{
			MaxSessionsPerReplica: ptr.To[int32](10), MaxSessionsPerNamespace: ptr.To[int32](2)}},
	}
}

// Calls running on a shared harness hold places of its namespace's like
// sessions do: with two held, the namespace's next call is refused
// HarnessAtCapacity and holds nothing, while another namespace's call
// (the control) and a call of a session already bound there (which runs in
// its session's place) are admitted. The garbage collector cannot take a
// running call's places, and an ended call gives them back.
func TestCallsHoldPlacesOfTheirNamespace(t *testing.T) {
	e, j := journalOnlyEngine(t)
	h, srv := placesHarness(), Server{Name: "codex-app-server-0"}
	bg := context.Background()
	pod, teamA := serverKey(h, srv.Name), tenantKey(h.Namespace, h.Name, "team-a")
	held := func(key string) int {
		t.Helper()
		n, err := j.Reserved(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	var running []*callPlaces
	for i := range 2 {
		_, c, err := e.holdCallPlaces(bg, callSession("team-a", i), h, srv)
		if err != nil {
			t.Fatalf("team-a call %d: %v", i, err)
		}
		running = append(running, c)
	}
	if held(teamA) != 2 || held(pod) != 2 {
		t.Fatalf("two running calls hold %d of team-a's places and %d of the pod's, want 2 and 2", held(teamA), held(pod))
	}

	next := callSession("team-a", 2)
	_, _, err := e.holdCallPlaces(bg, next, h, srv)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeHarnessAtCapacity || !we.Retryable ||
		!strings.Contains(we.Message, "maxSessionsPerNamespace 2") || !strings.Contains(we.Message, "team-a") {
		t.Fatalf("team-a's third call: %v, want a retryable HarnessAtCapacity naming maxSessionsPerNamespace 2 and team-a", err)
	}
	if held(teamA) != 2 || held(pod) != 2 {
		t.Fatalf("the refused call holds a place: team-a %d, pod %d, want 2 and 2", held(teamA), held(pod))
	}
	if err := j.DeleteSession(callKey(next)); err != nil {
		t.Fatalf("the refused call still holds its lease: %v", err)
	}

	_, other, err := e.holdCallPlaces(bg, callSession("team-b", 3), h, srv)
	if err != nil {
		t.Fatalf("control: team-b's call: %v", err)
	}
	other.giveBack()

	bound := callSession("team-a", 4)
	bound.Status.NativeBinding = &v1alpha1.NativeBinding{ThreadID: "t", Pod: srv.Name, HarnessNamespace: h.Namespace, HarnessName: h.Name}
	_, own, err := e.holdCallPlaces(bg, bound, h, srv)
	if err != nil {
		t.Fatalf("the call of a session bound to the harness was refused: %v", err)
	}
	if held(teamA) != 2 || held(pod) != 2 {
		t.Fatalf("the bound session's call took a place of its own: team-a %d, pod %d, want 2 and 2", held(teamA), held(pod))
	}
	own.giveBack()

	if err := j.DeleteSession(callKey(callSession("team-a", 0))); !errors.Is(err, store.ErrSessionBusy) {
		t.Fatalf("the garbage collector's DeleteSession of a running call: %v, want ErrSessionBusy", err)
	}
	for _, c := range running {
		c.giveBack()
	}
	if held(teamA) != 0 || held(pod) != 0 {
		t.Fatalf("ended calls still hold team-a %d, pod %d places", held(teamA), held(pod))
	}
	_, again, err := e.holdCallPlaces(bg, next, h, srv)
	if err != nil {
		t.Fatalf("team-a's call once the others ended: %v", err)
	}
	again.giveBack()
	keys, err := j.Sessions()
	if err != nil || len(keys) != 0 {
		t.Fatalf("ended calls left keys in the store: %v (%v)", keys, err)
	}
}

// A pod's places bound calls too: with the pod full, a call is refused
// HarnessAtCapacity naming maxSessionsPerReplica, also in the harness's
// own namespace (which has no namespace limit).
func TestCallsHoldPlacesOfThePod(t *testing.T) {
	e, _ := journalOnlyEngine(t)
	h, srv := placesHarness(), Server{Name: "codex-app-server-0"}
	h.Spec.AppServer.MaxSessionsPerReplica = ptr.To[int32](1)
	_, c, err := e.holdCallPlaces(context.Background(), callSession("agents", 0), h, srv)
	if err != nil {
		t.Fatalf("the first call: %v", err)
	}
	defer c.giveBack()
	_, _, err = e.holdCallPlaces(context.Background(), callSession("agents", 1), h, srv)
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeHarnessAtCapacity || !strings.Contains(we.Message, "maxSessionsPerReplica 1") {
		t.Fatalf("a call on a full pod: %v, want HarnessAtCapacity naming maxSessionsPerReplica 1", err)
	}
}

// A session runs one call at a time, beside its turn: while its call runs,
// a second call of it waits for the call lease (with its caller gone it
// gives up), and the session's own lease, which its turns take, is free.
func TestOneCallAtATimePerSessionBesideItsTurn(t *testing.T) {
	e, j := journalOnlyEngine(t)
	h := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{External: &v1alpha1.ExternalServer{URL: "wss://codex.example/"}}}
	srv := Server{Name: ExternalServerName}
	sess := callSession("agents", 0)
	_, first, err := e.holdCallPlaces(context.Background(), sess, h, srv)
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := e.holdCallPlaces(gone, sess, h, srv); !errors.Is(err, context.Canceled) {
		t.Fatalf("a second call of the session while its first runs: %v, want it to wait (and give up: its caller is gone)", err)
	}
	lease, err := j.Acquire(gone, SessionKey(sess), "turn", e.opts.LeaseTTL)
	if err != nil {
		t.Fatalf("the session's own lease is not free while its call runs: %v", err)
	}
	if err := j.Release(context.Background(), lease); err != nil {
		t.Fatal(err)
	}
	first.giveBack()
	_, second, err := e.holdCallPlaces(gone, sess, h, srv)
	if err != nil {
		t.Fatalf("the session's next call once the first ended: %v", err)
	}
	second.giveBack()
}
