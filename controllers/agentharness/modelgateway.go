package agentharness

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

// A harness with spec.modelGateway sends its model requests to the
// operator's model gateway (docs/design/model-gateway.md, "The managed
// app-server"): the manager makes the gateway the app-server's default
// model provider, with no credential, mounts the gateway's CA for Codex,
// and narrows the pods' egress to the gateway and the cluster DNS. Where
// the manager does not know the gateway (no --model-gateway-url, or its CA
// cannot be read) it changes no workload for such a harness: a pod
// without the gateway's provider would run without a provider at all.
//
// The CA reaches the pods as one more key of the harness's token Secret,
// which the manager already writes and the pods already mount: no object
// kind, RBAC rule or watch is added for it. Its content is in the pod
// template's credentials hash, so a new CA rolls the pods.

const (
	// ModelGatewayCAKey is the key of the CA Secret named by
	// --model-gateway-ca-secret (in the operator namespace) that holds the
	// gateway's CA certificates (PEM): the dispatcher's TLS Secret has it.
	ModelGatewayCAKey = "ca.crt"
	// ModelGatewayCADir is where the gateway's CA is mounted (read-only)
	// in the app-server container, as the file ca.crt; CODEX_CA_CERTIFICATE
	// names that file.
	ModelGatewayCADir = "/var/run/harness-operator/model-gateway"

	// tokenSecretCAKey is the token Secret's key of the copied CA.
	tokenSecretCAKey = "model-gateway-ca.crt"
	gatewayCAVolume  = "model-gateway-ca"
	// gatewayAPIPath is the gateway's path prefix of the Responses API
	// (POST /v1/responses).
	gatewayAPIPath = "/v1"

	// Manager flags named in conditions, Events and errors.
	flagModelGatewayURL      = "--model-gateway-url"
	flagModelGatewayCASecret = "--model-gateway-ca-secret"
)

// DefaultModelGatewayPodLabels select the model gateway's pods when
// ModelGatewaySettings.PodLabels is empty.
var DefaultModelGatewayPodLabels = map[string]string{
	objects.LabelName:      "harness-operator",
	objects.LabelComponent: "model-gateway",
}

// ModelGatewaySettings say where the operator's model gateway is. Empty
// URL: the manager knows no gateway, and harnesses with spec.modelGateway
// get no workload change (Ready False, ModelGatewayNotConfigured).
type ModelGatewaySettings struct {
	// URL is the gateway's address as the app-server pods reach it
	// (--model-gateway-url), e.g. its Service's
	// https://<name>.<namespace>.svc:8443: https, a host, no path, query
	// or userinfo. Codex's base_url is URL + /v1.
	URL string
	// CASecret names a Secret in the operator namespace whose ca.crt the
	// pods trust for the gateway (--model-gateway-ca-secret), e.g. the
	// dispatcher's TLS Secret. Empty: the pods trust only their image's
	// roots.
	CASecret string
	// Namespace is the gateway pods' namespace; empty means the operator
	// namespace.
	Namespace string
	// PodLabels select the gateway's pods in Namespace; empty means
	// DefaultModelGatewayPodLabels.
	PodLabels map[string]string
	// Port is the gateway pods' port the app-server pods may reach; zero
	// means the URL's port (443 when it has none).
	Port int32
}

// normalize checks the settings and fills in the defaults: URL must be
// https with a host and nothing after it but an optional "/".
func (m *ModelGatewaySettings) normalize(operatorNamespace string) error {
	if m.URL == "" {
		return nil
	}
	u, err := url.Parse(m.URL)
	if err != nil {
		return fmt.Errorf("%s: %w", flagModelGatewayURL, err)
	}
	switch {
	case u.Scheme != "https":
		return fmt.Errorf("%s %q: must be an https URL (the pods verify the gateway's certificate)", flagModelGatewayURL, m.URL)
	case u.Hostname() == "":
		return fmt.Errorf("%s %q: has no host", flagModelGatewayURL, m.URL)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return fmt.Errorf("%s %q: must be scheme, host and port only (no userinfo, path, query or fragment)", flagModelGatewayURL, m.URL)
	}
	if m.Port == 0 {
		m.Port = 443
		if p := u.Port(); p != "" {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return fmt.Errorf("%s %q: port: %w", flagModelGatewayURL, m.URL, err)
			}
			m.Port = int32(n)
		}
	}
	if m.Port < 1 || m.Port > 65535 {
		return fmt.Errorf("model gateway port %d is out of range", m.Port)
	}
	m.URL = u.Scheme + "://" + u.Host
	if m.Namespace == "" {
		m.Namespace = operatorNamespace
	}
	if len(m.PodLabels) == 0 {
		m.PodLabels = maps.Clone(DefaultModelGatewayPodLabels)
	}
	return nil
}

// baseURL is Codex's base_url of the gateway.
func (m ModelGatewaySettings) baseURL() string { return m.URL + gatewayAPIPath }

// gatewayRender is what a harness's objects need of the gateway.
type gatewayRender struct {
	settings ModelGatewaySettings
	// ca is the gateway's CA (PEM), empty when none is configured.
	ca []byte
}

// checkModelGateway is the phase that fails closed for a harness with
// spec.modelGateway that the manager cannot point at the gateway: it
// reports ModelGatewayNotConfigured (WorkloadReady and Ready False, each
// with an Event naming the flag) and no later phase runs, so no workload is
// created or changed. Otherwise it reads the gateway's CA for the pods.
func (r *Reconciler) checkModelGateway(ctx context.Context, s *scope) error {
	h := s.harness
	if h.Spec.ModelGateway == nil {
		return nil
	}
	problem := ""
	switch {
	case r.ModelGateway.URL == "":
		problem = fmt.Sprintf("spec.modelGateway is set, but the manager runs without %s: the app-server would have no model provider, so the operator changes no workload for this harness until the manager knows the gateway",
			flagModelGatewayURL)
	case r.ModelGateway.CASecret != "":
		ca, why, err := r.readGatewayCA(ctx)
		if err != nil {
			return err
		}
		problem, s.gatewayCA = why, ca
	}
	if problem == "" {
		return nil
	}
	v := verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonModelGatewayNotConfigured, problem}
	setCondition(h, v1alpha1.HarnessConditionWorkloadReady, v)
	setCondition(h, v1alpha1.HarnessConditionReady, v)
	s.final = true
	return nil
}

// readGatewayCA reads the CA Secret's ca.crt, uncached. A missing Secret or
// key, or a bundle without a certificate, is a problem to report (why), not
// an error to retry: the Secret's creation or change enqueues the harness
// (harnessesForSecret).
func (r *Reconciler) readGatewayCA(ctx context.Context) (ca []byte, why string, err error) {
	name := types.NamespacedName{Namespace: r.OperatorNamespace, Name: r.ModelGateway.CASecret}
	var secret corev1.Secret
	err = r.apiReader.Get(ctx, name, &secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Sprintf("the model gateway's CA Secret %s (%s) does not exist: the pods could not verify the gateway, so the operator changes no workload for this harness",
			name, flagModelGatewayCASecret), nil
	case err != nil:
		return nil, "", fmt.Errorf("get the model gateway's CA secret %s: %w", name, err)
	}
	ca = secret.Data[ModelGatewayCAKey]
	if err := checkCABundle(ca); err != nil {
		return nil, fmt.Sprintf("the model gateway's CA Secret %s (%s), key %s: %v; the operator changes no workload for this harness",
			name, flagModelGatewayCASecret, ModelGatewayCAKey, err), nil
	}
	return ca, "", nil
}

// checkCABundle accepts PEM that holds at least one certificate and
// nothing that is not a certificate.
func checkCABundle(b []byte) error {
	if len(b) == 0 {
		return errors.New("missing or empty")
	}
	n := 0
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a PEM block of type %q, not only certificates", block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("holds no PEM certificate")
	}
	return nil
}

// gatewayFor is what the workload of h needs of the gateway: nil for a
// harness without spec.modelGateway, or when the manager knows no gateway
// (checkModelGateway stopped such a reconcile before any workload).
func (r *Reconciler) gatewayFor(s *scope) *gatewayRender {
	if s.harness.Spec.ModelGateway == nil || r.ModelGateway.URL == "" {
		return nil
	}
	return &gatewayRender{settings: r.ModelGateway, ca: s.gatewayCA}
}

// gatewayArgs are the default args' model provider options.
func (w workload) gatewayArgs() []string {
	if w.gateway == nil {
		return nil
	}
	return codexconfig.ModelGatewayArgs(w.gateway.settings.baseURL())
}

// gatewayEnv points Codex at the mounted CA.
func (w workload) gatewayEnv() []*corev1ac.EnvVarApplyConfiguration {
	if w.gateway == nil || len(w.gateway.ca) == 0 {
		return nil
	}
	return []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName(codexconfig.CACertificateEnv).WithValue(ModelGatewayCADir + "/" + ModelGatewayCAKey),
	}
}

// gatewayCAMount mounts the token Secret's CA key as ca.crt (nil, nil
// without a CA).
func (w workload) gatewayCAMount() (*corev1ac.VolumeApplyConfiguration, *corev1ac.VolumeMountApplyConfiguration) {
	if w.gateway == nil || len(w.gateway.ca) == 0 {
		return nil, nil
	}
	vol := corev1ac.Volume().WithName(gatewayCAVolume).
		WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(objects.TokenSecretName(w.harness)).
			WithDefaultMode(0o444).
			WithItems(corev1ac.KeyToPath().WithKey(tokenSecretCAKey).WithPath(ModelGatewayCAKey)))
	mount := corev1ac.VolumeMount().WithName(gatewayCAVolume).WithMountPath(ModelGatewayCADir).WithReadOnly(true)
	return vol, mount
}

// egress lets the pods reach the gateway's pods on its port.
func (g *gatewayRender) egress() *networkingv1ac.NetworkPolicyEgressRuleApplyConfiguration {
	return networkingv1ac.NetworkPolicyEgressRule().
		WithTo(networkingv1ac.NetworkPolicyPeer().
			WithNamespaceSelector(metav1ac.LabelSelector().
				WithMatchLabels(map[string]string{corev1.LabelMetadataName: g.settings.Namespace})).
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(g.settings.PodLabels))).
		WithPorts(networkingv1ac.NetworkPolicyPort().
			WithProtocol(corev1.ProtocolTCP).
			WithPort(intstr.FromInt32(g.settings.Port)))
}
