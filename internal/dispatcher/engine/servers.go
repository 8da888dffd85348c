package engine

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

// ExternalServerName is the server name of an external app-server (and the
// nativeBinding.pod of sessions bound to it).
const ExternalServerName = "external"

// Server is the app-server a turn runs on.
type Server struct {
	// Name is the server pod's name, or ExternalServerName.
	Name string
	// URL is the app-server's WebSocket address.
	URL string
}

// ServerPods are the facts server choice needs about a managed harness.
type ServerPods struct {
	// Pods are the harness's server pods.
	Pods []corev1.Pod
	// Port is the app-server's WebSocket port in each pod.
	Port int32
	// Bound counts the sessions bound to each pod (nativeBinding.pod), the
	// load that maxSessionsPerReplica caps.
	Bound map[string]int
}

// PickServer chooses the app-server of a turn (docs/dispatcher-api.md,
// "Session identity, capacity and shutdown"): an external
// harness has one; a managed one keeps a session on the pod its native thread
// lives on, and sends an unbound session (or one whose thread is being reset)
// to the least-loaded ready pod that is not terminating and not full.
//
//   - a bound pod that is not ready, terminating or restarting → HarnessUnavailable
//     (retryable: the thread comes back with the pod; no silent re-binding);
//   - a bound pod that no longer exists and will not come back (its ordinal is
//     beyond spec.appServer.replicas) → NativeThreadLost, with the advice to reset;
//   - no ready pod → HarnessUnavailable; every ready pod full → HarnessAtCapacity.
func PickServer(h *v1alpha1.AgentHarness, pods ServerPods, binding *v1alpha1.NativeBinding, rebind bool) (Server, *wire.Error) {
	if h.Spec.External != nil {
		return Server{Name: ExternalServerName, URL: h.Spec.External.URL}, nil
	}
	if h.Spec.AppServer == nil {
		return Server{}, serverError(wire.CodeHarnessUnavailable, "AgentHarness %s/%s has no workload", h.Namespace, h.Name)
	}
	if binding != nil && !rebind {
		return boundServer(h, pods, binding.Pod)
	}
	capacity := int(ptrOr(h.Spec.AppServer.MaxSessionsPerReplica, 32))
	var ready []corev1.Pod
	for _, p := range pods.Pods {
		if podServes(&p) {
			ready = append(ready, p)
		}
	}
	if len(ready) == 0 {
		return Server{}, serverError(wire.CodeHarnessUnavailable, "no app-server pod of AgentHarness %s/%s is ready", h.Namespace, h.Name)
	}
	slices.SortFunc(ready, func(a, b corev1.Pod) int {
		if d := pods.Bound[a.Name] - pods.Bound[b.Name]; d != 0 {
			return d
		}
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	if pods.Bound[ready[0].Name] >= capacity {
		return Server{}, serverError(wire.CodeHarnessAtCapacity,
			"every ready app-server pod of AgentHarness %s/%s holds %d sessions (maxSessionsPerReplica)", h.Namespace, h.Name, capacity)
	}
	return podServer(&ready[0], pods.Port), nil
}

// boundServer returns the pod a session's native thread lives on.
func boundServer(h *v1alpha1.AgentHarness, pods ServerPods, name string) (Server, *wire.Error) {
	for i := range pods.Pods {
		p := &pods.Pods[i]
		if p.Name != name {
			continue
		}
		if !podServes(p) {
			return Server{}, serverError(wire.CodeHarnessUnavailable,
				"app-server pod %s, where this session's native thread lives, is not ready or is draining; retry when it is back", name)
		}
		return podServer(p, pods.Port), nil
	}
	if ordinal, ok := objects.PodOrdinal(h, name); ok && ordinal < objects.Replicas(h) {
		return Server{}, serverError(wire.CodeHarnessUnavailable,
			"app-server pod %s, where this session's native thread lives, is being recreated; retry when it is back", name)
	}
	return Server{}, serverError(wire.CodeNativeThreadLost,
		"app-server pod %s, where this session's native thread lived, is gone; reset the session (/reset bumps spec.resetGeneration) to start a new thread", name)
}

// podServes: Ready, running, not terminating.
func podServes(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podServer(p *corev1.Pod, port int32) Server {
	return Server{Name: p.Name, URL: "ws://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port)))}
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

func serverError(code wire.ErrorCode, format string, args ...any) *wire.Error {
	scope := wire.ScopeHarness
	if code == wire.CodeNativeThreadLost {
		scope = "" // a reset, not another harness, is the remedy
	}
	return &wire.Error{Code: code, Message: fmt.Sprintf(format, args...), Scope: scope, Retryable: code.Retryable()}
}
