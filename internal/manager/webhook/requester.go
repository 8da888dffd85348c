package webhook

import (
	"context"
	"errors"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/access"
)

// An AgentHarness makes the operator act with its own rights: it reads the
// Secrets the harness names (and sends the token to external.url, or mounts
// credentials into pods running appServer.image; the model gateway sends
// modelGateway's credential to its baseURL) and creates the workload.
// So creating one must need the rights it uses: the requesting user must be
// able to `get` every Secret (and ConfigMap) the harness references, and,
// for a managed harness, to `create` pods in its namespace. StatefulSets
// are not checked: the pod is what carries the image, the Secrets and the
// service account, and a user who may create pods can run the same thing
// as a StatefulSet would.
//
// The check runs on create and on every update that changes the spec, over
// the whole spec, not only the changed references: a Secret's use is set by
// the rest of the spec (an unchanged tokenSecretRef with a changed url sends
// the token elsewhere; unchanged credentials with a changed image hand them
// to another program), so whoever changes the spec must hold every right it
// uses. Updates that leave the spec alone (labels, finalizers) are not
// checked: they change nothing the operator does with a Secret.

// accessNeed is one right the requester must hold, at the field that needs it.
type accessNeed struct {
	path  *field.Path
	attrs authorizationv1.ResourceAttributes
}

// accessNeeds lists every right h makes the operator use on the requester's
// behalf, in field order.
func accessNeeds(h *v1alpha1.AgentHarness) []accessNeed {
	spec := field.NewPath("spec")
	ns := h.Namespace
	get := func(path *field.Path, resource, name string) accessNeed {
		return accessNeed{path: path, attrs: authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: resource, Name: name}}
	}
	var needs []accessNeed
	if e := h.Spec.External; e != nil {
		needs = append(needs, get(spec.Child("external", "tokenSecretRef", "name"), "secrets", e.TokenSecretRef.Name))
	}
	a := h.Spec.AppServer
	if a == nil {
		return append(needs, modelGatewayNeeds(h, get)...)
	}
	app := spec.Child("appServer")
	needs = append(needs, accessNeed{path: app, attrs: authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"}})
	for i, c := range a.Credentials {
		needs = append(needs, get(app.Child("credentials").Index(i).Child("secretKeyRef", "name"), "secrets", c.SecretKeyRef.Name))
	}
	for i, e := range a.Env {
		if e.ValueFrom == nil {
			continue
		}
		from := app.Child("env").Index(i).Child("valueFrom")
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			needs = append(needs, get(from.Child("secretKeyRef", "name"), "secrets", r.Name))
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			needs = append(needs, get(from.Child("configMapKeyRef", "name"), "configmaps", r.Name))
		}
	}
	return append(needs, modelGatewayNeeds(h, get)...)
}

// modelGatewayNeeds: the model gateway sends the credential Secret's key to
// modelGateway.baseURL, which the requester chooses.
func modelGatewayNeeds(h *v1alpha1.AgentHarness, get func(*field.Path, string, string) accessNeed) []accessNeed {
	g := h.Spec.ModelGateway
	if g == nil {
		return nil
	}
	return []accessNeed{get(field.NewPath("spec", "modelGateway", "credentialSecretRef", "name"), "secrets", g.CredentialSecretRef.Name)}
}

// requesterErrors refuses, field by field, the rights of accessNeeds(h) that
// the requesting user does not hold. old is nil on create. A review that
// cannot be made is returned as an error: the request is refused (fail
// closed), never admitted.
func (v *harnessValidator) requesterErrors(ctx context.Context, old, h *v1alpha1.AgentHarness) (field.ErrorList, error) {
	if old != nil && equality.Semantic.DeepEqual(old.Spec, h.Spec) {
		return nil, nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("check the requester's rights: %w", err)
	}
	var errs field.ErrorList
	verdicts := map[authorizationv1.ResourceAttributes]error{}
	for _, n := range accessNeeds(h) {
		verdict, seen := verdicts[n.attrs]
		if !seen {
			verdict = v.access.Check(ctx, req.UserInfo, n.attrs)
			verdicts[n.attrs] = verdict
		}
		var denied *access.DeniedError
		switch {
		case verdict == nil:
		case errors.As(verdict, &denied):
			errs = append(errs, field.Forbidden(n.path, denied.Error()))
		default:
			return nil, verdict
		}
	}
	return errs, nil
}
