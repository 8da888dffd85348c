package engine

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

func pod(name, ip string, ready, terminating bool) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip},
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	if terminating {
		p.DeletionTimestamp = ptr.To(metav1.Now())
	}
	return p
}

func TestPickServer(t *testing.T) {
	managed := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{AppServer: &v1alpha1.AppServerWorkload{
			Replicas: ptr.To[int32](3), MaxSessionsPerReplica: ptr.To[int32](2),
		}},
	}
	external := &v1alpha1.AgentHarness{Spec: v1alpha1.AgentHarnessSpec{External: &v1alpha1.ExternalServer{URL: "ws://127.0.0.1:4500"}}}
	three := []corev1.Pod{pod("codex-app-server-0", "10.0.0.10", true, false), pod("codex-app-server-1", "10.0.0.11", true, false), pod("codex-app-server-2", "10.0.0.12", true, false)}
	bound := func(pod string) *v1alpha1.NativeBinding { return &v1alpha1.NativeBinding{ThreadID: "t", Pod: pod} }

	tests := []struct {
		name     string
		harness  *v1alpha1.AgentHarness
		pods     []corev1.Pod
		load     map[string]int
		binding  *v1alpha1.NativeBinding
		rebind   bool
		want     string
		wantURL  string
		wantCode wire.ErrorCode
	}{
		{name: "an external harness has one server", harness: external, want: ExternalServerName, wantURL: "ws://127.0.0.1:4500"},
		{name: "an unbound session goes to the least-loaded ready pod", harness: managed, pods: three,
			load: map[string]int{"codex-app-server-0": 2, "codex-app-server-1": 1}, want: "codex-app-server-2", wantURL: "ws://10.0.0.12:4500"},
		{name: "ties go to the lowest pod name", harness: managed, pods: three, want: "codex-app-server-0"},
		{name: "draining: no new turn goes to a terminating pod", harness: managed,
			pods: []corev1.Pod{pod("codex-app-server-0", "10.0.0.10", true, true), pod("codex-app-server-1", "10.0.0.11", true, false)},
			want: "codex-app-server-1"},
		{name: "a pod that is not ready takes no turns", harness: managed,
			pods: []corev1.Pod{pod("codex-app-server-0", "10.0.0.10", false, false)}, wantCode: wire.CodeHarnessUnavailable},
		{name: "no ready pod is HarnessUnavailable (retryable), never a fallback", harness: managed, wantCode: wire.CodeHarnessUnavailable},
		{name: "every ready pod full is HarnessAtCapacity", harness: managed, pods: three,
			load: map[string]int{"codex-app-server-0": 2, "codex-app-server-1": 2, "codex-app-server-2": 5}, wantCode: wire.CodeHarnessAtCapacity},
		{name: "a bound session stays on its pod even when others are emptier", harness: managed, pods: three,
			load: map[string]int{"codex-app-server-1": 2}, binding: bound("codex-app-server-1"), want: "codex-app-server-1"},
		{name: "a bound pod that is draining is unavailable: the thread comes back with it, no silent re-binding", harness: managed,
			pods:    []corev1.Pod{pod("codex-app-server-0", "10.0.0.10", true, true), pod("codex-app-server-1", "10.0.0.11", true, false)},
			binding: bound("codex-app-server-0"), wantCode: wire.CodeHarnessUnavailable},
		{name: "a bound pod being recreated (ordinal within replicas) is unavailable", harness: managed, pods: three[1:],
			binding: bound("codex-app-server-0"), wantCode: wire.CodeHarnessUnavailable},
		{name: "a bound pod that no longer exists is NativeThreadLost", harness: managed, pods: three,
			binding: bound("codex-app-server-7"), wantCode: wire.CodeNativeThreadLost},
		{name: "a reset (rebind) chooses afresh", harness: managed, pods: three,
			load: map[string]int{"codex-app-server-0": 1}, binding: bound("codex-app-server-7"), rebind: true, want: "codex-app-server-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := PickServer(tt.harness, ServerPods{Pods: tt.pods, Port: 4500, Bound: tt.load}, tt.binding, tt.rebind)
			if tt.wantCode != "" {
				if err == nil || err.Code != tt.wantCode {
					t.Fatalf("got %+v, %v; want %s", s, err, tt.wantCode)
				}
				if err.Retryable != tt.wantCode.Retryable() || err.Message == "" {
					t.Fatalf("error %+v: retryable must follow the code, and the message must say why", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if s.Name != tt.want || (tt.wantURL != "" && s.URL != tt.wantURL) {
				t.Fatalf("got %+v, want %s %s", s, tt.want, tt.wantURL)
			}
		})
	}
}
