package engine

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	harnessscheme "github.com/openclaw/harness-operator/internal/platform/scheme"
	"github.com/openclaw/harness-operator/internal/policy/snapshot"
)

// With selection views, the turns of a namespace list the cluster's
// harnesses and policies once, not once per turn, and copy none of them;
// an event makes the next turn list them again.
func TestTurnsDecideFromTheNamespaceView(t *testing.T) {
	t.Parallel()
	scheme, err := harnessscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	reader, err := newMemCache(scheme, selectionCluster(64, 1000, 10, 1000))
	if err != nil {
		t.Fatal(err)
	}
	views := snapshot.NewViews(reader)
	e := &Engine{reader: reader, opts: Options{SelectionViews: views}}
	sess := &v1alpha1.AgentSession{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"},
		Spec: v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:s", SessionID: "s-id", Model: "acme/m1"}}
	a := &wire.Attempt{RunID: "run-1", AgentID: "main", Provider: "acme", ModelID: "m1"}
	ctx := context.Background()

	var first string
	for turn := range 3 {
		snap, d, err := e.selectTurn(ctx, sess, a)
		if err != nil || d.Error != nil || d.HarnessID == "" {
			t.Fatalf("turn %d: %+v, %v; want a harness", turn, d, err)
		}
		if len(snap.Harnesses) != 64 || len(snap.Policies) != 10 || snap.Session != sess {
			t.Fatalf("turn %d: %d harnesses, %d policies; want the 64 visible and the 10 selecting, with the session",
				turn, len(snap.Harnesses), len(snap.Policies))
		}
		if first == "" {
			first = d.HarnessID
		} else if d.HarnessID != first {
			t.Fatalf("turn %d chose %s, the first %s", turn, d.HarnessID, first)
		}
		h, err := e.decidedHarness(ctx, snap, d)
		if err != nil || h.Name != d.HarnessRef.Name {
			t.Fatalf("turn %d: the decided harness %v, %v", turn, h, err)
		}
	}
	if got := reader.lists.Load(); got != 2 {
		t.Fatalf("three turns listed %d times, want 2 (the view's harnesses and policies, once)", got)
	}
	if got := reader.copies.Load(); got != 0 {
		t.Fatalf("three turns deep-copied %d objects, want none", got)
	}

	views.InvalidateAll()
	if _, _, err := e.selectTurn(ctx, sess, a); err != nil {
		t.Fatal(err)
	}
	if got := reader.lists.Load(); got != 4 {
		t.Fatalf("the turn after an event: %d lists in all, want 4 (the view read again)", got)
	}
}
