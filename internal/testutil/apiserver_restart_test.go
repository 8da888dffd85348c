package testutil

import (
	"context"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAPIServerRestartKeepsClientsAndServiceAccountTokens: after
// RestartAPIServer the clients made before reach the same API server with
// the same credentials, what etcd held is still there, and a ServiceAccount
// token issued before still validates (the signing key is the same).
func TestAPIServerRestartKeepsClientsAndServiceAccountTokens(t *testing.T) {
	ctx := context.Background()
	env, err := StartEnv()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	token, err := ServiceAccountToken(ctx, env.Client, cs, "default", "gateway", "campaign")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the second restart restarts the replacement
		start := time.Now()
		ended, err := env.RestartAPIServer(200 * time.Millisecond)
		if err != nil {
			t.Fatalf("restart %d: %v", i, err)
		}
		t.Logf("restart %d: %s; ready again after %s", i, ended, time.Since(start).Round(time.Millisecond))
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "gateway"}, &corev1.ServiceAccount{}); err != nil {
			t.Fatalf("after restart %d the ServiceAccount created before is not read back: %v", i, err)
		}
		review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authnv1.TokenReview{
			Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{"campaign"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("TokenReview after restart %d: %v", i, err)
		}
		if !review.Status.Authenticated {
			t.Fatalf("after restart %d a token issued before no longer validates: %q", i, review.Status.Error)
		}
	}
}
