package main

// The credential the CLI sends to the dispatcher. It is never the
// kubeconfig's: a kubeconfig token (or an exec plugin's) is valid for the
// whole API server, and a dispatcher — or anything posing as one at a
// mistyped URL — that received it could act as the user everywhere. The CLI
// instead requests, with the kubeconfig, a short-lived token of a
// ServiceAccount in the session's namespace bound to the dispatcher's
// audience, so what reaches the dispatcher is worth one ServiceAccount's
// turn grant, for ten minutes, at the dispatcher only. The dispatcher records
// that ServiceAccount as the requester; the person who asked for the token
// is in the API server's audit record of the TokenRequest.

import (
	"context"
	"fmt"
	"io"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const (
	// defaultServiceAccount is the ServiceAccount whose token the CLI
	// requests (--service-account).
	defaultServiceAccount = "harness-cli"
	// defaultAudience is the chart's dispatcher.tokenAudience (--audience).
	defaultAudience = "harness-dispatcher"
	// tokenLifetime is the lifetime asked of a requested token: the API
	// server's minimum, 10 minutes — a turn's stream outlives its token,
	// which is checked when the request arrives.
	tokenLifetime = 600
)

// requestToken requests a dispatcher-audience token for the ServiceAccount
// (TokenRequest, as `kubectl create token` does) and writes to stderr which
// identity the dispatcher will see.
func (d *dispatcherFlags) requestToken(ctx context.Context, kc *kubeClient, stderr io.Writer) (string, error) {
	if d.audience == "" {
		return "", badInput(fmt.Errorf("--audience is empty: the token must be bound to the dispatcher's --token-audience"))
	}
	cs, err := kubernetes.NewForConfig(kc.cfg)
	if err != nil {
		return "", fmt.Errorf("create clientset: %w", err)
	}
	lifetime := int64(tokenLifetime)
	tr, err := cs.CoreV1().ServiceAccounts(kc.namespace).CreateToken(ctx, d.serviceAccount, &authnv1.TokenRequest{
		Spec: authnv1.TokenRequestSpec{Audiences: []string{d.audience}, ExpirationSeconds: &lifetime},
	}, metav1.CreateOptions{})
	switch {
	case apierrors.IsForbidden(err):
		return "", fmt.Errorf("you may not request a token for ServiceAccount %s/%s: that needs `create` on serviceaccounts/token (resourceName %s) in namespace %s "+
			"(the chart's harness-operator-cli ClusterRole grants it for harness-cli); or pick another ServiceAccount with --service-account: %w",
			kc.namespace, d.serviceAccount, d.serviceAccount, kc.namespace, err)
	case apierrors.IsNotFound(err):
		return "", fmt.Errorf("ServiceAccount %s/%s does not exist: create it and bind it to the harness-operator-cli-serviceaccount ClusterRole "+
			"(the chart does for the namespaces in cli.serviceAccountNamespaces), or pick another with --service-account: %w", kc.namespace, d.serviceAccount, err)
	case err != nil:
		return "", fmt.Errorf("request a token for ServiceAccount %s/%s: %w", kc.namespace, d.serviceAccount, err)
	}
	valid := time.Until(tr.Status.ExpirationTimestamp.Time).Round(time.Minute)
	_, _ = fmt.Fprintf(stderr, "using system:serviceaccount:%s:%s (token for audience %s, valid %dm)\n",
		kc.namespace, d.serviceAccount, d.audience, int(valid.Minutes()))
	return tr.Status.Token, nil
}
