package main

// Reaching the dispatcher through the API server's service proxy, when
// neither --dispatcher nor $HARNESS_DISPATCHER_URL is given
// (docs/dispatcher-service-proxy.md).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

const (
	envDispatcherNamespace     = "HARNESS_DISPATCHER_NAMESPACE"
	defaultDispatcherNamespace = "harness-operator-system"
	// dispatcherPortName is the name of the dispatcher Service's port; the
	// proxy path names it, and its scheme, as https:<service>:https.
	dispatcherPortName = "https"
)

// dispatcherSelector are the labels of the dispatcher Service (the Helm
// chart sets them).
var dispatcherSelector = labels.Set{
	"app.kubernetes.io/name":      "harness-operator",
	"app.kubernetes.io/component": "dispatcher",
}

// proxyDispatcher is a dispatcherClient whose base URL is the dispatcher
// Service's service-proxy path on the kubeconfig's API server,
// <server>/api/v1/namespaces/<ns>/services/https:<svc>:https/proxy, and whose
// HTTP client is the kubeconfig's (rest.HTTPClientFor: client certificates,
// tokens, exec plugins and impersonation work as for kubectl). The API
// server authenticates the kubeconfig's credential, checks `create` (POST)
// or `get` (GET) on services/proxy for that Service, removes Authorization
// and forwards the rest, so the dispatcher's token — the ServiceAccount's
// (token.go), never the kubeconfig's — travels in
// wire.ProxyAuthorizationHeader. The API server does not verify the
// dispatcher's serving certificate on its hop, so --dispatcher-ca has no
// meaning here and is refused rather than silently ignored.
func (d *dispatcherFlags) proxyDispatcher(ctx context.Context, kc *kubeClient, stderr io.Writer) (*dispatcherClient, error) {
	if d.ca != "" {
		return nil, badInput(fmt.Errorf("--dispatcher-ca applies to a dispatcher URL (--dispatcher or $%s); without one the CLI goes through the API server's service proxy, "+
			"which connects to the dispatcher itself", envDispatcherURL))
	}
	ns := d.namespace
	if ns == "" {
		ns = os.Getenv(envDispatcherNamespace)
	}
	if ns == "" {
		ns = defaultDispatcherNamespace
	}
	svc := d.service
	if svc == "" {
		var err error
		if svc, err = findDispatcherService(ctx, kc.c, ns); err != nil {
			return nil, err
		}
	}
	base, _, err := rest.DefaultServerUrlFor(kc.cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig server: %w", err)
	}
	hc, err := rest.HTTPClientFor(kc.cfg)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig HTTP client: %w", err)
	}
	token, err := d.requestToken(ctx, kc, stderr)
	if err != nil {
		return nil, err
	}
	u := *base
	// Path is the unescaped form; namespace and Service names are DNS labels.
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/namespaces/" + ns + "/services/https:" + svc + ":" + dispatcherPortName + "/proxy"
	u.RawPath = ""
	return &dispatcherClient{base: &u, http: hc, token: token, authHeader: wire.ProxyAuthorizationHeader}, nil
}

// findDispatcherService returns the name of the one Service in ns labeled
// as the dispatcher, with a port named https.
func findDispatcherService(ctx context.Context, c client.Reader, ns string) (string, error) {
	var list corev1.ServiceList
	if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels(dispatcherSelector)); err != nil {
		hint := ""
		if apierrors.IsForbidden(err) {
			hint = " (name it with --dispatcher-service to skip the lookup)"
		}
		return "", fmt.Errorf("find the dispatcher Service: list Services in namespace %q with labels %s: %w%s; or pass --dispatcher <url>",
			ns, dispatcherSelector, err, hint)
	}
	switch len(list.Items) {
	case 0:
		return "", badInput(fmt.Errorf("no dispatcher: no Service in namespace %q has the labels %s; pass --dispatcher <url> (or set %s), "+
			"--dispatcher-namespace <namespace> (or set %s) or --dispatcher-service <name>", ns, dispatcherSelector, envDispatcherURL, envDispatcherNamespace))
	case 1:
	default:
		names := make([]string, len(list.Items))
		for i := range list.Items {
			names[i] = list.Items[i].Name
		}
		return "", badInput(fmt.Errorf("%d Services in namespace %q have the labels %s (%s): pick one with --dispatcher-service <name>, or pass --dispatcher <url>",
			len(names), ns, dispatcherSelector, strings.Join(names, ", ")))
	}
	s := &list.Items[0]
	for _, p := range s.Spec.Ports {
		if p.Name == dispatcherPortName {
			return s.Name, nil
		}
	}
	return "", fmt.Errorf("the dispatcher Service %s/%s has no port named %q (the service proxy path names it); pass --dispatcher <url>", ns, s.Name, dispatcherPortName)
}

// apiServerStatus recognizes an answer of the API server itself rather
// than of the dispatcher behind its service proxy — a metav1.Status body:
// the caller may not use services/proxy (403), the Service is unknown (404),
// it has no ready endpoint or the API server could not connect (503) — and
// says so. It returns nil for any other body. A missing Service is bad input
// (exit 2); the rest exit 1.
func apiServerStatus(resp *http.Response, body []byte) error {
	var st metav1.Status
	if json.Unmarshal(body, &st) != nil || st.Kind != "Status" || st.APIVersion != "v1" {
		return nil
	}
	err := fmt.Errorf("the API server answered %s on the dispatcher's service proxy (the request did not reach the dispatcher): %s", resp.Status, st.Message)
	if resp.StatusCode == http.StatusNotFound {
		return badInput(err)
	}
	return err
}
