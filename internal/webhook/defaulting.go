package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"

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
		return admission.Errored(http.StatusBadRequest, err)
	}
	warnings, err := h.fn(ctx, obj)
	if err != nil {
		return admission.Denied(err.Error())
	}
	marshaled, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	resp := admission.PatchResponseFromRaw(req.Object.Raw, marshaled)
	resp.Warnings = warnings
	return resp
}
