package modelgateway

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
)

// KubeUpstreams reads the credential's AgentHarness and its
// spec.modelGateway.credentialSecretRef from the API server on every
// request, uncached, as the manager reads credentials: a rotated key, a
// changed baseURL or a harness deleted is seen by the next request. The
// gateway in a cluster uses it through WatchedUpstreams, which keeps what
// it read while watches of the two objects see no change.
type KubeUpstreams struct {
	// Reader reads from the API server directly (not an informer cache).
	Reader client.Reader
}

var _ Upstreams = KubeUpstreams{}

// credentialField names the harness's field of the credential in errors.
const credentialField = "spec.modelGateway.credentialSecretRef"

// Upstream implements Upstreams. It refuses a harness whose UID is not the
// credential's (deleted and created again under its name: the new one's
// credential must not serve the old one's turns), one without
// spec.modelGateway, and a Secret value that is missing, empty or not one
// line. Errors name the harness and the field, never the value.
func (k KubeUpstreams) Upstream(ctx context.Context, h modelcred.Harness) (Upstream, error) {
	u, _, err := k.read(ctx, h)
	return u, err
}

// readVersions are the resourceVersions of the two objects an Upstream was
// read from, and the Secret's name: a watch from them sees every later
// change (WatchedUpstreams).
type readVersions struct {
	harness, secret, secretName string
}

// read is Upstream with the versions it read.
func (k KubeUpstreams) read(ctx context.Context, h modelcred.Harness) (Upstream, readVersions, error) {
	name := h.Namespace + "/" + h.Name
	var ah v1alpha1.AgentHarness
	if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: h.Name}, &ah); err != nil {
		if apierrors.IsNotFound(err) {
			return Upstream{}, readVersions{}, fmt.Errorf("AgentHarness %s does not exist", name)
		}
		return Upstream{}, readVersions{}, fmt.Errorf("read AgentHarness %s: %w", name, err)
	}
	if string(ah.UID) != h.UID {
		return Upstream{}, readVersions{}, fmt.Errorf("AgentHarness %s has UID %s, not the credential's %s: it was deleted and created again since the turn began", name, ah.UID, h.UID)
	}
	mg := ah.Spec.ModelGateway
	if mg == nil {
		return Upstream{}, readVersions{}, fmt.Errorf("AgentHarness %s has no spec.modelGateway: its model requests do not go through the gateway", name)
	}
	base, err := parseBaseURL(mg.BaseURL)
	if err != nil {
		return Upstream{}, readVersions{}, fmt.Errorf("AgentHarness %s: spec.modelGateway.baseURL %w", name, err)
	}
	cred, secretVersion, err := k.credential(ctx, name, h.Namespace, mg.CredentialSecretRef)
	if err != nil {
		return Upstream{}, readVersions{}, err
	}
	u := Upstream{BaseURL: base, Credential: cred, Headers: maps.Clone(mg.Headers)}
	if len(mg.QueryParams) > 0 {
		u.QueryParams = url.Values{}
		for k, v := range mg.QueryParams {
			u.QueryParams.Set(k, v)
		}
	}
	return u, readVersions{harness: ah.ResourceVersion, secret: secretVersion, secretName: mg.CredentialSecretRef.Name}, nil
}

// credential reads the Secret key ref in namespace: one trailing newline
// (as `kubectl create secret --from-file` keeps it) is dropped; an empty
// value, or one with a line break, a space or a control character left,
// is refused: it would not make one Authorization header. It returns the
// Secret's resourceVersion too.
func (k KubeUpstreams) credential(ctx context.Context, harness, namespace string, ref v1alpha1.SecretKeyReference) (string, string, error) {
	var s corev1.Secret
	if err := k.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			return "", "", fmt.Errorf("AgentHarness %s: %s names Secret %s/%s, which does not exist", harness, credentialField, namespace, ref.Name)
		}
		return "", "", fmt.Errorf("AgentHarness %s: read Secret %s/%s of %s: %w", harness, namespace, ref.Name, credentialField, err)
	}
	raw, ok := s.Data[ref.Key]
	if !ok {
		return "", "", fmt.Errorf("AgentHarness %s: Secret %s/%s has no key %q (%s)", harness, namespace, ref.Name, ref.Key, credentialField)
	}
	v := strings.TrimSuffix(string(raw), "\n")
	switch {
	case v == "":
		return "", "", fmt.Errorf("AgentHarness %s: the value of Secret %s/%s key %q is empty (%s)", harness, namespace, ref.Name, ref.Key, credentialField)
	case strings.ContainsAny(v, "\r\n"):
		return "", "", fmt.Errorf("AgentHarness %s: the value of Secret %s/%s key %q has more than one line (%s): it must be the bearer token alone", harness, namespace, ref.Name, ref.Key, credentialField)
	case strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return "", "", fmt.Errorf("AgentHarness %s: the value of Secret %s/%s key %q holds a space or a control character (%s): it must be the bearer token alone", harness, namespace, ref.Name, ref.Key, credentialField)
	}
	return v, s.ResourceVersion, nil
}

// parseBaseURL parses a baseURL: http or https with a host, no user
// information or fragment. Its query is kept apart from the path the
// gateway appends to.
func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("is not a URL: %w", err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return nil, fmt.Errorf("must be an http or https URL with a host, not %q", u.Redacted())
	case u.User != nil:
		return nil, fmt.Errorf("must not carry user information: put the credential in %s", credentialField)
	case u.Fragment != "":
		return nil, fmt.Errorf("must not carry a fragment, not %q", u.Redacted())
	}
	return u, nil
}
