package conditions

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// The naming rule of writers: every binary applies what it writes (owned
// objects and its part of a status) under one field manager,
// `harness-operator-<binary>`, so that two writers of one status never take
// each other's fields; each controller reports its Events as
// `harness-operator-<binary>/<controller>`, so `kubectl events` tells which
// controller of which binary spoke.

// FieldManager is the server-side apply field manager of a binary
// ("manager", "dispatcher").
func FieldManager(binary string) string { return "harness-operator-" + binary }

// EventReporter is the reportingController of a controller's Events.
func EventReporter(binary, controller string) string {
	return FieldManager(binary) + "/" + controller
}

// StatusWriter applies a controller's own part of an object's status with
// server-side apply and records an Event for each condition transition. The
// three controllers write their status only through it.
type StatusWriter struct {
	Client   client.Client
	Recorder events.EventRecorder
	// FieldManager owns the applied fields (FieldManager(binary)).
	FieldManager string
	// Quiet, when set, says that a condition seen for the first time is not
	// worth an Event (an initial "pending").
	Quiet func(c metav1.Condition) bool
	// Warning says that a condition needs an operator's attention: its
	// Event is a Warning, otherwise Normal.
	Warning func(c metav1.Condition) bool
}

// Apply writes status — holding only the fields this controller owns,
// observedGeneration included — as obj's status, then records an Event for
// every condition of after whose status or reason differs from before (the
// conditions as read). The caller calls it only when its part changed.
func (w StatusWriter) Apply(ctx context.Context, obj client.Object, status any, before, after []metav1.Condition) error {
	gvk, err := apiutil.GVKForObject(obj, w.Client.Scheme())
	if err != nil {
		return fmt.Errorf("apply status: %w", err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	st, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return fmt.Errorf("apply status: convert: %w", err)
	}
	u.Object["status"] = st
	if err := w.Client.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(w.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply status: %w", err)
	}
	w.events(obj, before, after)
	return nil
}

func (w StatusWriter) events(obj client.Object, before, after []metav1.Condition) {
	if w.Recorder == nil {
		return
	}
	for _, c := range after {
		prev := meta.FindStatusCondition(before, c.Type)
		if !Transition(prev, c, w.Quiet) {
			continue
		}
		typ := corev1.EventTypeNormal
		if w.Warning != nil && w.Warning(c) {
			typ = corev1.EventTypeWarning
		}
		w.Recorder.Eventf(obj, nil, typ, c.Reason, c.Type, "%s", c.Message)
	}
}

// Transition says whether cur is worth an Event: a first observation that
// is not quiet, or a change of status or reason.
func Transition(prev *metav1.Condition, cur metav1.Condition, quiet func(metav1.Condition) bool) bool {
	if prev == nil {
		return quiet == nil || !quiet(cur)
	}
	return prev.Status != cur.Status || prev.Reason != cur.Reason
}
