// Package objects is the naming contract of the objects the operator
// runs for a managed AgentHarness: the names, labels and annotations of its
// StatefulSet, Service, NetworkPolicy, PodDisruptionBudget, token Secret and
// server pods, and which server pods are the harness's own. The manager
// (controllers/agentharness) creates them and the dispatcher
// (internal/dispatcher/engine) finds them with the same definitions; it is a leaf
// package so that neither imports the other.
package objects

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// Names of the objects the manager owns. The dispatcher finds a harness's
// servers and token with them and with the labels and annotations of
// api/v1alpha1 (names.go).
const (
	// ContainerName is the app-server container of a server pod.
	ContainerName = "app-server"
	// PortName names the app-server's WebSocket port on the container and the
	// headless Service.
	PortName = "app-server"
	// TokenSecretKey is the key of the token Secret that holds the capability
	// token clients send as `Authorization: Bearer`.
	TokenSecretKey = "token"

	// Component is app.kubernetes.io/component of owned objects and pods.
	Component = "app-server"
	// ManagedBy is app.kubernetes.io/managed-by of owned objects and pods.
	ManagedBy = "harness-operator"

	// LabelName, LabelInstance, LabelComponent and LabelManagedBy are the
	// app.kubernetes.io labels of owned objects and pods.
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	LabelManagedBy = "app.kubernetes.io/managed-by"

	// workloadSuffix ends the StatefulSet, Service, NetworkPolicy and PDB names.
	workloadSuffix = "-app-server"
	// maxWorkloadName keeps `<name>-<10-char revision hash>` (the StatefulSet
	// controller's controller-revision-hash label) within 63 characters.
	maxWorkloadName = 52
	// maxLabelValue is the longest label value Kubernetes accepts.
	maxLabelValue = 63
)

// WorkloadName is the name of the StatefulSet, headless Service,
// NetworkPolicy and PodDisruptionBudget of a managed harness; server pods are
// `<WorkloadName>-<ordinal>`. It is a DNS label that starts with a letter (a
// Service name) and is short enough for the StatefulSet's revision labels.
// Names that do not fit are shortened and get a hash suffix of the full name.
func WorkloadName(h *v1alpha1.AgentHarness) string {
	return workloadName(h.Name)
}

// TokenSecretName is the name of the operator-generated Secret holding the
// capability token of a managed harness (key TokenSecretKey).
func TokenSecretName(h *v1alpha1.AgentHarness) string {
	return workloadName(h.Name) + "-token"
}

func workloadName(harness string) string {
	if harness != "" && isLower(harness[0]) && !strings.Contains(harness, ".") &&
		len(harness)+len(workloadSuffix) <= maxWorkloadName {
		return harness + workloadSuffix
	}
	s := strings.ReplaceAll(harness, ".", "-")
	if s == "" || !isLower(s[0]) {
		s = "ah-" + s
	}
	sum := shortHash(harness)
	keep := maxWorkloadName - len(workloadSuffix) - 1 - len(sum)
	if len(s) > keep {
		s = s[:keep]
	}
	s = strings.TrimRight(s, "-")
	return s + "-" + sum + workloadSuffix
}

// harnessLabelValue is the v1alpha1.LabelHarness value for a harness name.
func harnessLabelValue(harness string) string {
	if len(harness) <= maxLabelValue {
		return harness
	}
	sum := shortHash(harness)
	s := strings.TrimRight(harness[:maxLabelValue-1-len(sum)], "-.")
	return s + "-" + sum
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}

func isLower(b byte) bool { return b >= 'a' && b <= 'z' }

// SelectorLabels select the server pods of a harness (immutable on the
// StatefulSet, so they never change for a harness). Labels are a filter,
// never proof: OwnsServerPod decides which pods are the harness's.
func SelectorLabels(h *v1alpha1.AgentHarness) map[string]string {
	return map[string]string{
		v1alpha1.LabelHarness: harnessLabelValue(h.Name),
		LabelComponent:        Component,
	}
}

// ObjectLabels are the labels of every owned object and server pod.
func ObjectLabels(h *v1alpha1.AgentHarness) map[string]string {
	l := SelectorLabels(h)
	l[LabelName] = string(h.Spec.Adapter)
	l[LabelInstance] = harnessLabelValue(h.Name)
	l[LabelManagedBy] = ManagedBy
	return l
}

// ManagedSelector selects every object and server pod the manager labels
// for some harness (v1alpha1.LabelHarness set, managed-by harness-operator): the
// manager's and the dispatcher's caches of server pods and StatefulSets
// hold only these. A filter, never proof of ownership.
func ManagedSelector() labels.Selector {
	hasHarness, err := labels.NewRequirement(v1alpha1.LabelHarness, selection.Exists, nil)
	if err != nil {
		panic(err) // constant, valid arguments
	}
	managed, err := labels.NewRequirement(LabelManagedBy, selection.Equals, []string{ManagedBy})
	if err != nil {
		panic(err)
	}
	return labels.NewSelector().Add(*hasHarness, *managed)
}
