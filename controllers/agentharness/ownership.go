package agentharness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

// conflictRecheck is how often a harness blocked by a name conflict looks
// again: the foreign object carries no owner reference to it, so its
// removal enqueues nothing.
const conflictRecheck = 30 * time.Second

// generatedObject is one object of a generated name the manager creates.
type generatedObject struct {
	gvk  schema.GroupVersionKind
	name string
}

// generatedObjects are the objects of a managed harness, by kind and name.
func generatedObjects(h *v1alpha1.AgentHarness) []generatedObject {
	name := objects.WorkloadName(h)
	return []generatedObject{
		{corev1.SchemeGroupVersion.WithKind("Secret"), objects.TokenSecretName(h)},
		{corev1.SchemeGroupVersion.WithKind("Service"), name},
		{appsv1.SchemeGroupVersion.WithKind("StatefulSet"), name},
		{networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"), name},
		{policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"), name},
	}
}

// checkNameConflicts refuses to adopt: when an object of a generated name
// exists and the harness is not its controller (by UID), the manager neither
// applies onto it (a forced apply would take it over, and the owner
// reference would later garbage-collect it) nor deletes it. The harness
// reports NameConflict naming each such object, and no phase after this one
// runs. The read is uncached so that an object created a moment ago is seen;
// one created between this read and the apply is not (the API offers no
// create-only apply).
func (r *Reconciler) checkNameConflicts(ctx context.Context, s *scope) error {
	h := s.harness
	var conflicts []string
	var errs []error
	for _, o := range generatedObjects(h) {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(o.gvk)
		err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: h.Namespace, Name: o.name}, obj)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, fmt.Errorf("get %s %s: %w", o.gvk.Kind, o.name, err))
		case !metav1.IsControlledBy(obj, h):
			conflicts = append(conflicts, o.gvk.Kind+" "+o.name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(conflicts) == 0 {
		return nil
	}
	msg := fmt.Sprintf("name conflict: %s in namespace %s not controlled by this AgentHarness; the operator leaves such objects alone and creates nothing for the harness (rename the harness or remove them)",
		strings.Join(conflicts, ", "), h.Namespace)
	v := verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonNameConflict, msg}
	setCondition(h, v1alpha1.HarnessConditionWorkloadReady, v)
	setCondition(h, v1alpha1.HarnessConditionReady, v)
	s.final = true
	s.requeue(conflictRecheck)
	return nil
}
