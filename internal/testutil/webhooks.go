package testutil

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// WaitWebhooksServing waits until the API server calls the manager's
// admission webhooks with success: a dry-run create of a RuntimePolicy
// passes them. A manager is ready once it injected its CA into the webhook
// configurations; the API server trusts that CA once its informer has seen
// the change, moments later — until then every create fails with x509
// "certificate signed by unknown authority".
func WaitWebhooksServing(ctx context.Context, c client.Client, timeout time.Duration) error {
	probe := &v1alpha1.RuntimePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe"},
		Spec:       v1alpha1.RuntimePolicySpec{Providers: []v1alpha1.ProviderRuntimePolicy{{Provider: "openai", Runtime: "codex"}}},
	}
	deadline := time.Now().Add(timeout)
	for {
		err := c.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the admission webhooks did not serve within %v: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond): // the interval of the probes; their success is the proof
		}
	}
}
