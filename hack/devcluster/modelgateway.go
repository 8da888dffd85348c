package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The model gateway of `make run` (--model-gateway, or HARNESS_MODEL_GATEWAY
// set to true): `dispatcher model-gateway` as a local process beside the
// dispatcher, what the chart's modelGateway.enabled runs in a cluster
// (docs/design/model-gateway.md). It serves an ephemeral certificate on
// loopback, admits loopback upstreams (a stub model on this machine), asks
// the local dispatcher whether each credential's turn still runs, and
// reads harnesses and Secrets with the devcluster admin's kubeconfig.
const (
	// modelGatewayServiceAccount is the gateway's identity at the
	// dispatcher (its --model-gateway-user), as the chart names it.
	modelGatewayServiceAccount = "harness-model-gateway"
	// modelGatewayCASecret holds the gateway's CA (ca.crt) in the operator
	// namespace: the manager's --model-gateway-ca-secret.
	modelGatewayCASecret = "harness-model-gateway-ca"
	// modelGatewayTokenLife is the lifetime of the gateway's token for the
	// dispatcher; devcluster writes a new one at a third of it.
	modelGatewayTokenLife = time.Hour
)

var (
	// modelGateway turns the gateway on (--model-gateway).
	modelGateway bool
	// modelGatewayAddr and modelGatewayProbeAddr are its listeners.
	modelGatewayAddr      = "127.0.0.1:9445"
	modelGatewayProbeAddr = "127.0.0.1:8084"
)

// modelGatewayFlags registers the gateway's flags; the switch defaults to
// HARNESS_MODEL_GATEWAY, so `HARNESS_MODEL_GATEWAY=true make run` turns it on.
func modelGatewayFlags() {
	on, _ := strconv.ParseBool(os.Getenv("HARNESS_MODEL_GATEWAY"))
	flag.BoolVar(&modelGateway, "model-gateway", on, "Run the model gateway (dispatcher model-gateway) beside the dispatcher and point the manager's --model-gateway-* flags at it (default: $HARNESS_MODEL_GATEWAY).")
	flag.StringVar(&modelGatewayAddr, "model-gateway-addr", modelGatewayAddr, "The model gateway's address (https).")
	flag.StringVar(&modelGatewayProbeAddr, "model-gateway-probe-addr", modelGatewayProbeAddr, "The model gateway's health probe and metrics address.")
}

// modelGatewayUser is the gateway's ServiceAccount user.
func modelGatewayUser() string {
	return "system:serviceaccount:" + operatorNamespace + ":" + modelGatewayServiceAccount
}

// managerModelGatewayArgs are the manager's flags that send harnesses with
// spec.modelGateway to the local gateway. The CA Secret appears once the
// gateway runs; until then such harnesses report ModelGatewayNotConfigured,
// and its creation reconciles them.
func managerModelGatewayArgs() []string {
	if !modelGateway {
		return nil
	}
	return []string{
		"--model-gateway-url=https://" + modelGatewayAddr,
		"--model-gateway-ca-secret=" + modelGatewayCASecret,
	}
}

// dispatcherModelGatewayArgs let the gateway ask the dispatcher whether a
// credential's turn still runs.
func dispatcherModelGatewayArgs() []string {
	if !modelGateway {
		return nil
	}
	return []string{"--model-gateway-user=" + modelGatewayUser()}
}

// startModelGateway runs the gateway once the dispatcher serves (it reads
// the turn-token Secret the dispatcher creates), keeps its token for the
// dispatcher fresh, and publishes its CA for the manager. The channel
// yields the gateway's exit.
func startModelGateway(ctx context.Context, c client.Client, dispatcherBin, kubeconfig, local, dispatcherCA string) (<-chan error, error) {
	tokenFile := filepath.Join(local, "model-gateway-token")
	if err := ensureGatewayIdentity(ctx, c); err != nil {
		return nil, err
	}
	if err := writeGatewayToken(ctx, c, tokenFile); err != nil {
		return nil, err
	}
	go refreshGatewayToken(ctx, c, tokenFile)

	caFile := filepath.Join(local, "model-gateway-ca.pem")
	exited, err := startProcess(ctx, dispatcherBin, kubeconfig, "model-gateway",
		"--bind-address="+modelGatewayAddr,
		"--probe-bind-address="+modelGatewayProbeAddr,
		"--dispatcher-url=https://"+dispatcherAddr,
		"--dispatcher-ca-file="+dispatcherCA,
		"--token-file="+tokenFile,
		// No pod namespace to default to.
		"--turn-token-secret-namespace="+operatorNamespace,
		// An ephemeral CA and certificate for 127.0.0.1 and localhost; the
		// app-servers trust the CA through the manager's CA Secret.
		"--tls-ca-out="+caFile,
		// Upstreams are stub models on this machine (development only).
		"--allow-loopback-upstreams",
	)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, "model gateway", "http://"+modelGatewayProbeAddr+"/readyz", exited); err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("read the model gateway's CA: %w", err)
	}
	secret := corev1ac.Secret(modelGatewayCASecret, operatorNamespace).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{"ca.crt": ca})
	if err := c.Apply(ctx, secret, fieldOwner, client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("apply Secret %s/%s: %w", operatorNamespace, modelGatewayCASecret, err)
	}
	return exited, nil
}

// ensureGatewayIdentity creates the gateway's ServiceAccount.
func ensureGatewayIdentity(ctx context.Context, c client.Client) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: modelGatewayServiceAccount, Namespace: operatorNamespace}}
	if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create ServiceAccount %s/%s: %w", operatorNamespace, modelGatewayServiceAccount, err)
	}
	return nil
}

// writeGatewayToken requests a token of the gateway's ServiceAccount for
// the dispatcher's audience and writes it where the gateway reads it on
// every request (as the kubelet rotates a projected token).
func writeGatewayToken(ctx context.Context, c client.Client, path string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: modelGatewayServiceAccount, Namespace: operatorNamespace}}
	tr := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
		Audiences:         []string{dispatcherAudience},
		ExpirationSeconds: ptr.To(int64(modelGatewayTokenLife / time.Second)),
	}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		return fmt.Errorf("request a token of ServiceAccount %s/%s: %w", operatorNamespace, modelGatewayServiceAccount, err)
	}
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(tr.Status.Token), 0o600); err != nil {
		return fmt.Errorf("write the model gateway's token: %w", err)
	}
	return os.Rename(tmp, path)
}

// refreshGatewayToken writes a new token every third of its lifetime until
// ctx ends; a failure is reported and retried at the next tick (the old
// token still has two thirds of its life).
func refreshGatewayToken(ctx context.Context, c client.Client, path string) {
	t := time.NewTicker(modelGatewayTokenLife / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := writeGatewayToken(ctx, c, path); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "devcluster: model gateway token:", err)
			}
		}
	}
}
