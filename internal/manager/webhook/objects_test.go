package webhook

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/scheme"
)

// TestPoliciesNamingReadsOnlyThePoliciesOfTheID: the AgentHarness
// validator's question "does any policy name this id" reads the policies
// of that id through the cache's index, with this server's admitted
// policies on top (one that names it, one whose update dropped it).
func TestPoliciesNamingReadsOnlyThePoliciesOfTheID(t *testing.T) {
	policy := func(name, rv string, runtimes ...v1alpha1.RuntimeID) *v1alpha1.RuntimePolicy {
		p := &v1alpha1.RuntimePolicy{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, UID: k8stypes.UID("uid-" + name)}}
		for i, r := range runtimes {
			p.Spec.Providers = append(p.Spec.Providers, v1alpha1.ProviderRuntimePolicy{Provider: v1alpha1.ProviderID("p" + string(rune('a'+i))), Runtime: r})
		}
		return p
	}
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	names := func(ps []*v1alpha1.RuntimePolicy) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(sch).
		WithObjects(policy("names-pool", "", "pool"), policy("names-other", "", "other"), policy("names-both", "", "other", "pool")).
		WithIndex(&v1alpha1.RuntimePolicy{}, policyRuntimeIDField, policyRuntimeIDs).Build()
	r := newReaders(c, c)
	got, err := r.policiesNaming(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"names-both", "names-pool"}; !slices.Equal(names(got), want) {
		t.Fatalf("policies naming pool: %v, want %v", names(got), want)
	}

	// Admitted, not yet in the cache: a new policy naming pool, and an
	// update of names-pool that names another runtime now.
	r.policies.record(policy("new-pool", "", "pool"), nil, nil)
	var stored v1alpha1.RuntimePolicy
	if err := c.Get(ctx, client.ObjectKey{Name: "names-pool"}, &stored); err != nil {
		t.Fatal(err)
	}
	updated := policy("names-pool", "", "other")
	r.policies.record(updated, &stored, &stored)
	got, err = r.policiesNaming(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"names-both", "new-pool"}; !slices.Equal(names(got), want) {
		t.Fatalf("policies naming pool with admitted writes on top: %v, want %v", names(got), want)
	}
}
