package objects

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// Replicas is the number of server pods a managed harness asks for
// (spec.appServer.replicas, default 1); 0 for an external harness.
func Replicas(h *v1alpha1.AgentHarness) int {
	if h.Spec.AppServer == nil {
		return 0
	}
	if r := h.Spec.AppServer.Replicas; r != nil {
		return int(*r)
	}
	return 1
}

// PodOrdinal is the StatefulSet ordinal of a server pod name of h
// (`<WorkloadName>-<ordinal>`, no leading zeros); false for any other name.
func PodOrdinal(h *v1alpha1.AgentHarness, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, WorkloadName(h)+"-")
	if !ok || rest == "" || (len(rest) > 1 && rest[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// OwnsStatefulSet reports whether sts is the harness's StatefulSet: its name
// is WorkloadName(h) in h's namespace and h (by UID) is its controller.
func OwnsStatefulSet(h *v1alpha1.AgentHarness, sts *appsv1.StatefulSet) bool {
	return sts != nil && sts.Namespace == h.Namespace && sts.Name == WorkloadName(h) &&
		metav1.IsControlledBy(sts, h)
}

// OwnsServerPod reports whether pod is one of the harness's server pods, the
// only pods that may be sent its capability token and turns: its controller
// (by UID) is the harness's own StatefulSet sts (OwnsStatefulSet), and its
// name is `<WorkloadName>-<ordinal>` with an ordinal below
// spec.appServer.replicas. Labels, annotations and names can be set by anyone
// who may create pods in the namespace; only the owner UID chain cannot.
func OwnsServerPod(h *v1alpha1.AgentHarness, sts *appsv1.StatefulSet, pod *corev1.Pod) bool {
	if !OwnsStatefulSet(h, sts) || pod.Namespace != h.Namespace || !metav1.IsControlledBy(pod, sts) {
		return false
	}
	ord, ok := PodOrdinal(h, pod.Name)
	return ok && ord < Replicas(h)
}
