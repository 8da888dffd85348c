package turntoken

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// TestReadNeverCreatesTheKey: Read, for the model gateway, refuses a
// missing Secret and leaves it missing; once a dispatcher made the key,
// Read returns that key.
func TestReadNeverCreatesTheKey(t *testing.T) {
	ref := types.NamespacedName{Namespace: newNamespace(t), Name: "dispatcher-turn-token"}
	if _, err := Read(ctx(t), env.Client, ref); !apierrors.IsNotFound(err) {
		t.Fatalf("Read of a missing Secret: %v, want an error wrapping NotFound", err)
	}
	var s corev1.Secret
	if err := env.Client.Get(ctx(t), ref, &s); !apierrors.IsNotFound(err) {
		t.Fatalf("Read created the Secret (get: %v)", err)
	}
	made, err := Load(ctx(t), env.Client, env.Client, ref)
	if err != nil {
		t.Fatal(err)
	}
	read, err := Read(ctx(t), env.Client, ref)
	if err != nil {
		t.Fatalf("Read of the dispatcher's Secret: %v", err)
	}
	if string(read.Bytes()) != string(made.Bytes()) || !read.Verify("team-a/uid-1", "run-1", made.Sign("team-a/uid-1", "run-1")) {
		t.Fatal("Read returns another key than the one Load made")
	}
}
