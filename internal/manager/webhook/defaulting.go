package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// defaultFunc fills in and normalizes obj in place and says what it changed
// that the user should know about.
type defaultFunc[T runtime.Object] func(ctx context.Context, obj T) (admission.Warnings, error)

// defaultingHandler is a mutating handler that, unlike controller-runtime's
// Defaulter, returns warnings with its patch: a normalized alias is accepted,
// and the user is told what was written instead.
type defaultingHandler[T runtime.Object] struct {
	decoder admission.Decoder
	fn      defaultFunc[T]
	new     func() T
}

func defaulting[T runtime.Object](scheme *runtime.Scheme, fn defaultFunc[T]) admission.Handler {
	return &defaultingHandler[T]{decoder: admission.NewDecoder(scheme), fn: fn, new: newObject[T]}
}

// newObject allocates the value a pointer type T points to.
func newObject[T runtime.Object]() T {
	var zero T
	return reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T) //nolint:forcetypeassert // T is *X by construction
}

func (h *defaultingHandler[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	obj := h.new()
	if err := h.decoder.Decode(req, obj); err != nil {
		// A value of the wrong type (a string for an integer, …). The API
		// server's schema validation, which runs after the mutating
		// webhooks, refuses it naming the field and the type it must have;
		// a decoding error from here would name Go types instead. Nothing to
		// default: admit it unchanged for the schema to judge.
		return admission.Allowed("")
	}
	before, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	warnings, err := h.fn(ctx, obj)
	if err != nil {
		return admission.Denied(err.Error())
	}
	after, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if bytes.Equal(before, after) {
		// Nothing defaulted (most creates): no patch to compute, which is
		// most of this handler's work.
		resp := admission.Allowed("")
		resp.Warnings = warnings
		return resp
	}
	resp := patchDefaults(req.Object.Raw, before, after)
	resp.Warnings = warnings
	return resp
}

// patchDefaults patches the object as it came (raw) with only what
// defaulting changed (the difference from before to after, both the object
// marshaled from its Go type). A patch from raw to after would also write
// every field the user left out as its Go zero value: an omitted required
// field would then be refused as an invalid "" rather than as required.
func patchDefaults(raw, before, after []byte) admission.Response {
	changes, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	patched, err := jsonpatch.MergePatch(raw, changes)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(raw, patched)
}
