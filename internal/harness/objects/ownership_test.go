package objects

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

func controllerRef(kind, name string, uid types.UID) []metav1.OwnerReference {
	return []metav1.OwnerReference{{Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}
}

func TestOwnsServerPod(t *testing.T) {
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "codex", UID: "harness-uid"},
		Spec:       v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{Replicas: ptr.To(int32(2))}},
	}
	ownSTS := func() *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "codex-app-server", UID: "sts-uid",
			OwnerReferences: controllerRef("AgentHarness", "codex", "harness-uid")}}
	}
	pod := func(name string, owner []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, OwnerReferences: owner}}
	}
	stsRef := controllerRef("StatefulSet", "codex-app-server", "sts-uid")
	for _, tc := range []struct {
		name string
		sts  func() *appsv1.StatefulSet
		pod  *corev1.Pod
		want bool
	}{
		{"the StatefulSet's pod", ownSTS, pod("codex-app-server-1", stsRef), true},
		{"no owner", ownSTS, pod("codex-app-server-0", nil), false},
		{"owner reference that is not the controller", ownSTS, pod("codex-app-server-0",
			[]metav1.OwnerReference{{Kind: "StatefulSet", Name: "codex-app-server", UID: "sts-uid"}}), false},
		{"controlled by another StatefulSet of the same name (old UID)", ownSTS,
			pod("codex-app-server-0", controllerRef("StatefulSet", "codex-app-server", "old-sts-uid")), false},
		{"ordinal equal to replicas", ownSTS, pod("codex-app-server-2", stsRef), false},
		{"not a server pod name", ownSTS, pod("codex-app-server-x", stsRef), false},
		{"other namespace", ownSTS, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "codex-app-server-0", OwnerReferences: stsRef}}, false},
		{"StatefulSet not controlled by the harness", func() *appsv1.StatefulSet {
			s := ownSTS()
			s.OwnerReferences = controllerRef("AgentHarness", "codex", "other-harness-uid")
			return s
		}, pod("codex-app-server-0", stsRef), false},
		{"StatefulSet of another name", func() *appsv1.StatefulSet {
			s := ownSTS()
			s.Name = "rogue"
			return s
		}, pod("codex-app-server-0", controllerRef("StatefulSet", "rogue", "sts-uid")), false},
		{"no StatefulSet", func() *appsv1.StatefulSet { return nil }, pod("codex-app-server-0", stsRef), false},
	} {
		if got := OwnsServerPod(h, tc.sts(), tc.pod); got != tc.want {
			t.Errorf("%s: OwnsServerPod = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPodOrdinal(t *testing.T) {
	h := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	for name, want := range map[string]int{"x-app-server-0": 0, "x-app-server-12": 12, "x-app-server-01": -1,
		"x-app-server-": -1, "x-app-server-a": -1, "y-app-server-1": -1, "x-app-server-1-2": -1, "x-app-server--1": -1} {
		got, ok := PodOrdinal(h, name)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("PodOrdinal(%q) = %d, want %d", name, got, want)
		}
	}
}
