package testutil

import (
	"context"
	"fmt"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// ExternalCodex creates, in namespace, the Secret codex-token holding token
// and the external AgentHarness codex (harnessId codex) at url, the way the
// samples register an app-server; the controller's verdict is the caller's
// to wait for (WaitHarnessCondition).
func ExternalCodex(ctx context.Context, c client.Client, namespace, url, token string) (*v1alpha1.AgentHarness, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "codex-token"},
		Data:       map[string][]byte{"token": []byte(token)},
	}
	if err := c.Create(ctx, secret); err != nil {
		return nil, fmt.Errorf("create Secret %s/codex-token: %w", namespace, err)
	}
	h := &v1alpha1.AgentHarness{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{
			HarnessID: "codex", Label: "Codex", Adapter: v1alpha1.AdapterCodexAppServer,
			External: &v1alpha1.ExternalServer{URL: url, TokenSecretRef: v1alpha1.SecretKeyReference{Name: secret.Name, Key: "token"}},
		},
	}
	if err := c.Create(ctx, h); err != nil {
		return nil, fmt.Errorf("create AgentHarness %s/codex: %w", namespace, err)
	}
	return h, nil
}

// WaitHarnessCondition polls h until the controller has observed its
// generation and condition typ has status want (observed at that
// generation), and returns the condition; h is refreshed as it goes.
func WaitHarnessCondition(ctx context.Context, c client.Client, h *v1alpha1.AgentHarness, typ string, want metav1.ConditionStatus, timeout time.Duration) (*metav1.Condition, error) {
	deadline := time.Now().Add(timeout)
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(h), h); err != nil {
			return nil, err
		}
		cond := meta.FindStatusCondition(h.Status.Conditions, typ)
		if h.Status.ObservedGeneration == h.Generation && cond != nil && cond.Status == want && cond.ObservedGeneration == h.Generation {
			return cond, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("AgentHarness %s/%s: condition %s is not %s after %s: %+v", h.Namespace, h.Name, typ, want, timeout, h.Status.Conditions)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ServiceAccountToken creates the ServiceAccount unless it exists and returns
// an hour's token for it from the TokenRequest API, bound to audiences (none:
// the API server's own).
func ServiceAccountToken(ctx context.Context, c client.Client, cs kubernetes.Interface, namespace, name string, audiences ...string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, sa)); err != nil {
		return "", fmt.Errorf("create ServiceAccount %s/%s: %w", namespace, name, err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: audiences, ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}
