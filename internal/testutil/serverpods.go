package testutil

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/platform/netguard"
)

// ServerPod is the pod the StatefulSet controller would create for sts at
// ordinal (envtest runs no StatefulSet controller): the template's labels,
// annotations and spec, controlled by sts.
func ServerPod(sts *appsv1.StatefulSet, ordinal int) *corev1.Pod {
	tmpl := sts.Spec.Template
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   sts.Namespace,
			Name:        fmt.Sprintf("%s-%d", sts.Name, ordinal),
			Labels:      tmpl.Labels,
			Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = sts.Spec.ServiceName
	return pod
}

// SetPodStatus writes the status a kubelet would: Running, Ready or not,
// the pod IP and the app-server container's imageID.
func SetPodStatus(ctx context.Context, c client.Client, pod *corev1.Pod, ip, imageID string, ready bool) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
		return err
	}
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{
		Phase:  corev1.PodRunning,
		PodIP:  ip,
		PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: readyStatus, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:    objects.ContainerName,
			Image:   pod.Spec.Containers[0].Image,
			ImageID: imageID,
			Ready:   ready,
			Started: ptr.To(true),
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	if err := c.Status().Update(ctx, pod); err != nil {
		return fmt.Errorf("write the status of pod %s: %w", pod.Name, err)
	}
	return nil
}

// LoopbackExternalDial is the external-server dial policy of the suites:
// their external app-servers are real Codex processes on loopback, which the
// operator's default policy refuses (--allow-insecure-loopback-external).
var LoopbackExternalDial = netguard.Policy{AllowLoopback: true}
