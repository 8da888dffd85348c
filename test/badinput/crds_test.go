package badinput_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// crdCase is one bad object of testdata/crds.yaml and the refusal kubectl
// must print.
type crdCase struct {
	Name string `json:"name"`
	// Namespace is where the object goes: the suite's harness namespace
	// unless it is "outside" (a namespace the manager serves no harness in).
	// Cluster-scoped kinds ignore it.
	Namespace string `json:"namespace,omitempty"`
	// Existing, when set, is created first (it must be admitted) and Object
	// is then sent as its update.
	Existing string `json:"existing,omitempty"`
	// Object is the manifest sent, as kubectl sends it (strict field
	// validation).
	Object string  `json:"object"`
	Want   crdWant `json:"want"`
}

type crdWant struct {
	// Reason is the API status reason: Invalid, Forbidden, BadRequest.
	Reason metav1.StatusReason `json:"reason"`
	// Field is the field path the error must name ("<field>: …").
	Field string `json:"field"`
	// Message lists substrings of the error as kubectl prints it.
	Message []string `json:"message,omitempty"`
}

func loadCRDCorpus(t *testing.T) []crdCase {
	t.Helper()
	b, err := os.ReadFile("testdata/crds.yaml")
	must(t, err)
	var cases []crdCase
	if err := yaml.UnmarshalStrict(b, &cases); err != nil {
		t.Fatalf("testdata/crds.yaml: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if c.Name == "" || seen[c.Name] || c.Want.Reason == "" || c.Want.Field == "" {
			t.Fatalf("testdata/crds.yaml: case %q: a unique name, want.reason and want.field are required", c.Name)
		}
		seen[c.Name] = true
	}
	return cases
}

// runCRDCorpus sends each case's object through the API server, where the
// CRD schemas, their CEL rules and the manager's admission webhooks judge it,
// and checks the refusal, then that nothing was written: a refused create
// leaves no object, a refused update leaves the object as it was.
func (f *fixture) runCRDCorpus(t *testing.T) {
	cases := loadCRDCorpus(t)
	t.Logf("%d CRD cases", len(cases))
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			obj := f.manifest(t, c.Object, c.Namespace)
			var err error
			var before *unstructured.Unstructured
			if c.Existing != "" {
				before = f.existing(t, c.Existing, c.Namespace)
				err = f.k8s.Patch(ctx, obj, specPatch(t, obj), client.FieldValidation("Strict"))
			} else {
				err = f.k8s.Create(ctx, obj, client.FieldValidation("Strict"))
			}
			expectRefusal(t, err, c.Want)
			t.Log(err)

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			getErr := f.k8s.Get(ctx, client.ObjectKeyFromObject(obj), got)
			switch {
			case before == nil && !apierrors.IsNotFound(getErr):
				t.Errorf("the refused create left an object (get: %v)", getErr)
			case before != nil && getErr != nil:
				t.Errorf("the existing object is gone after a refused update: %v", getErr)
			case before != nil && got.GetGeneration() != before.GetGeneration():
				t.Errorf("the refused update changed the object: generation %d, was %d", got.GetGeneration(), before.GetGeneration())
			}
		})
	}
}

// existing creates a case's existing object and returns it as stored.
func (f *fixture) existing(t *testing.T, doc, namespace string) *unstructured.Unstructured {
	t.Helper()
	obj := f.manifest(t, doc, namespace)
	if err := f.k8s.Create(context.Background(), obj, client.FieldValidation("Strict")); err != nil {
		t.Fatalf("create the existing object: %v", err)
	}
	return obj
}

// specPatch is a merge patch setting obj's spec, as `kubectl edit` or
// `kubectl patch --type=merge` sends it: unlike an update it carries no
// resourceVersion, so the finalizer the dispatcher adds to a new session
// meanwhile does not turn the refusal into a conflict.
func specPatch(t *testing.T, obj *unstructured.Unstructured) client.Patch {
	t.Helper()
	b, err := json.Marshal(map[string]any{"spec": obj.Object["spec"]})
	must(t, err)
	return client.RawPatch(types.MergePatchType, b)
}

// manifest parses a case's YAML into an object in the case's namespace.
func (f *fixture) manifest(t *testing.T, doc, namespace string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	namespaced, err := f.k8s.IsObjectNamespaced(obj)
	must(t, err)
	switch {
	case !namespaced:
	case namespace == "outside":
		obj.SetNamespace(f.outside)
	default:
		obj.SetNamespace(f.ns)
	}
	return obj
}

// expectRefusal checks an API server refusal as kubectl shows it: the status
// reason, and a message naming the field path and saying why.
func expectRefusal(t *testing.T, err error, want crdWant) {
	t.Helper()
	if err == nil {
		t.Fatal("the API server admitted the object")
	}
	if reason := apierrors.ReasonForError(err); reason != want.Reason {
		t.Fatalf("reason %s, want %s: %v", reason, want.Reason, err)
	}
	msg := err.Error()
	if !strings.Contains(msg, want.Field+": ") && !strings.Contains(msg, `"`+want.Field+`"`) {
		t.Errorf("the error does not name the field %s: %s", want.Field, msg)
	}
	for _, m := range want.Message {
		if !strings.Contains(msg, m) {
			t.Errorf("the error does not say %q: %s", m, msg)
		}
	}
}
