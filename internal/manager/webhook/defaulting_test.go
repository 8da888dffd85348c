package webhook

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/scheme"
)

// maxAllocsUnchanged bounds the allocations of a defaulting call that
// rewrites nothing: decoding and marshaling twice. Computing the JSON
// patch, which such a call skips, took about 170 more.
const maxAllocsUnchanged = 60

// TestDefaultingWithoutRewritesSkipsThePatch: a session with nothing to
// default is admitted without a patch, and without the work of computing
// one; a session with an alias to rewrite gets its patch and warning.
func TestDefaultingWithoutRewritesSkipsThePatch(t *testing.T) {
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	handler := defaulting(sch, defaultSession)
	request := func(override v1alpha1.RuntimeID) admission.Request {
		s := &v1alpha1.AgentSession{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "AgentSession"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
			Spec: v1alpha1.AgentSessionSpec{AgentID: "main", SessionKey: "agent:main:s", SessionID: "s", Model: "openai/gpt-5",
				RuntimeOverride: override}}
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}
	}
	ctx := context.Background()

	unchanged := request("")
	resp := handler.Handle(ctx, unchanged)
	if !resp.Allowed || len(resp.Patches) > 0 || resp.PatchType != nil {
		t.Fatalf("nothing to default: allowed %v, patches %v, patch type %v; want allowed without a patch", resp.Allowed, resp.Patches, resp.PatchType)
	}
	if n := testing.AllocsPerRun(50, func() { handler.Handle(ctx, unchanged) }); n > maxAllocsUnchanged {
		t.Errorf("nothing to default: %v allocations per call, want at most %d (no patch computed)", n, maxAllocsUnchanged)
	}

	resp = handler.Handle(ctx, request("pi"))
	if !resp.Allowed || len(resp.Patches) != 1 || resp.Patches[0].Path != "/spec/runtimeOverride" || resp.Patches[0].Value != "openclaw" {
		t.Fatalf("control, an alias to rewrite: allowed %v, patches %+v; want the override written as openclaw", resp.Allowed, resp.Patches)
	}
	if len(resp.Warnings) != 1 {
		t.Errorf("control: warnings %v, want the rewrite's", resp.Warnings)
	}
}
