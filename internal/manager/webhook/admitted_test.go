package webhook

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// TestAdmittedMerge: what the validators see of one kind — the cache, with
// this server's admitted writes on top until the cache shows them.
func TestAdmittedMerge(t *testing.T) {
	harness := func(name, uid, rv, id string) *v1alpha1.AgentHarness {
		return &v1alpha1.AgentHarness{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid), ResourceVersion: rv},
			Spec:       v1alpha1.AgentHarnessSpec{HarnessID: id},
		}
	}
	type write struct {
		obj, old, cached *v1alpha1.AgentHarness
	}
	cases := []struct {
		name  string
		write write
		after time.Duration
		cache []*v1alpha1.AgentHarness
		want  []string // name=harnessId of every object seen, in order
		kept  bool     // the entry is still remembered afterwards
	}{
		{
			name:  "a create the cache does not show yet is added",
			write: write{obj: harness("new", "u1", "", "codex")},
			cache: []*v1alpha1.AgentHarness{harness("other", "u0", "5", "pi")},
			want:  []string{"other=pi", "new=codex"},
			kept:  true,
		},
		{
			name:  "a create the cache shows (same UID) is the cache's and forgotten",
			write: write{obj: harness("new", "u1", "", "codex")},
			cache: []*v1alpha1.AgentHarness{harness("new", "u1", "6", "codex")},
			want:  []string{"new=codex"},
		},
		{
			name:  "an object of the same name but another UID is not the create: the admitted one stands in",
			write: write{obj: harness("new", "u2", "", "codex")},
			cache: []*v1alpha1.AgentHarness{harness("new", "u1", "6", "old-id")},
			want:  []string{"new=codex"},
			kept:  true,
		},
		{
			name:  "a create of a name the cache holds is not remembered (AlreadyExists follows)",
			write: write{obj: harness("new", "u2", "", "codex"), cached: harness("new", "u1", "6", "old-id")},
			cache: []*v1alpha1.AgentHarness{harness("new", "u1", "6", "old-id")},
			want:  []string{"new=old-id"},
		},
		{
			name:  "an update the cache does not show yet replaces the cached object",
			write: write{obj: harness("h", "u1", "6", "b"), old: harness("h", "u1", "6", "a"), cached: harness("h", "u1", "6", "a")},
			cache: []*v1alpha1.AgentHarness{harness("h", "u1", "6", "a")},
			want:  []string{"h=b"},
			kept:  true,
		},
		{
			name:  "an update seen by a lagging cache still stands in when the cache reaches the replaced version",
			write: write{obj: harness("h", "u1", "6", "b"), old: harness("h", "u1", "6", "a"), cached: harness("h", "u1", "4", "z")},
			cache: []*v1alpha1.AgentHarness{harness("h", "u1", "6", "a")},
			want:  []string{"h=b"},
			kept:  true,
		},
		{
			name:  "an update is the cache's once it shows a newer version",
			write: write{obj: harness("h", "u1", "6", "b"), old: harness("h", "u1", "6", "a"), cached: harness("h", "u1", "6", "a")},
			cache: []*v1alpha1.AgentHarness{harness("h", "u1", "7", "b")},
			want:  []string{"h=b"},
		},
		{
			name:  "an admitted write the cache never shows expires",
			write: write{obj: harness("new", "u1", "", "codex")},
			after: admittedTTL + time.Millisecond,
			cache: []*v1alpha1.AgentHarness{harness("other", "u0", "5", "pi")},
			want:  []string{"other=pi"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitted[*v1alpha1.AgentHarness]()
			now := time.Unix(1000, 0)
			a.now = func() time.Time { return now }
			a.record(tc.write.obj, tc.write.old, tc.write.cached)
			now = now.Add(tc.after)
			var got []string
			for _, h := range a.merge(tc.cache) {
				got = append(got, h.Name+"="+h.Spec.HarnessID)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("saw %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("saw %v, want %v", got, tc.want)
				}
			}
			if kept := len(a.entries) == 1; kept != tc.kept {
				t.Errorf("entry remembered afterwards: %v, want %v", kept, tc.kept)
			}
		})
	}
}

// TestAdmittedForgetsWhatTheInformerSaw: once the informer reports the
// admitted object, a delete the webhook never sees does not bring the
// admitted copy back.
func TestAdmittedForgetsWhatTheInformerSaw(t *testing.T) {
	created := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "h", UID: "u1"}}
	stored := created.DeepCopy()
	stored.ResourceVersion = "7"

	a := newAdmitted[*v1alpha1.AgentHarness]()
	a.record(created, nil, nil)
	handler := a.eventHandler()
	handler.OnAdd(stored, false)
	if got := a.merge(nil); len(got) != 0 {
		t.Fatalf("after the informer added it and it was deleted, the view still holds %d objects", len(got))
	}

	a.record(created, nil, nil)
	handler.OnDelete(stored)
	if got := a.merge(nil); len(got) != 0 {
		t.Fatalf("after the informer reported its delete, the view still holds %d objects", len(got))
	}
}
