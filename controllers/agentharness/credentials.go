package agentharness

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// A pod reads its Secrets once, at start: Kubernetes neither restarts a
// container whose environment came from a Secret nor updates a subPath
// mount. So the content of every Secret key a managed pod uses is hashed into
// the pod template (v1alpha1.AnnotationCredentialsHash); a changed key rolls the pods
// like a changed spec, and each old pod drains its running turns within
// TerminationGracePeriodSeconds.
const (
	// indexAppServerSecret indexes AgentHarnesses by the Secrets their
	// managed pods use (spec.appServer.credentials and env valueFrom).
	indexAppServerSecret = "spec.appServer.secretRefs"
)

// secretKeyRef is one Secret key a server pod reads.
type secretKeyRef struct{ name, key string }

// appServerSecretRefs are the Secret keys of spec.appServer (credentials and
// env valueFrom.secretKeyRef), sorted, without duplicates. The token Secret
// is not among them: the controller generates it.
func appServerSecretRefs(h *v1alpha1.AgentHarness) []secretKeyRef {
	spec := h.Spec.AppServer
	if spec == nil {
		return nil
	}
	var refs []secretKeyRef
	for _, c := range spec.Credentials {
		refs = append(refs, secretKeyRef{c.SecretKeyRef.Name, c.SecretKeyRef.Key})
	}
	for _, e := range spec.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs = append(refs, secretKeyRef{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key})
		}
	}
	slices.SortFunc(refs, func(a, b secretKeyRef) int { return cmp.Or(cmp.Compare(a.name, b.name), cmp.Compare(a.key, b.key)) })
	return slices.Compact(refs)
}

// secretEnvNames are the app-server's environment variables that come from
// Secrets (Env credentials, env valueFrom.secretKeyRef): the pods exclude
// them from the environment of the sessions' tool processes
// (codexconfig.ToolEnvironmentArgs).
func secretEnvNames(h *v1alpha1.AgentHarness) []string {
	spec := h.Spec.AppServer
	var names []string
	for _, c := range spec.Credentials {
		if c.Mount == v1alpha1.CredentialMountEnv {
			names = append(names, c.Name)
		}
	}
	for _, e := range spec.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			names = append(names, e.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// appServerSecretNames is the field index function of indexAppServerSecret.
func appServerSecretNames(o client.Object) []string {
	var names []string
	for _, ref := range appServerSecretRefs(o.(*v1alpha1.AgentHarness)) {
		names = append(names, ref.name)
	}
	return slices.Compact(names)
}

// hashCredentials is the phase that hashes the pods' Secret keys for the
// pod template.
func (r *Reconciler) hashCredentials(ctx context.Context, s *scope) error {
	hash, err := r.credentialsHash(ctx, s.harness, s.token, s.gatewayCA)
	if err != nil {
		return err
	}
	s.credentialsHash = hash
	return nil
}

// credentialsHash is an HMAC-SHA256, keyed with the harness's token, of the
// token, of the model gateway's CA the pods trust (gatewayCA, when set) and
// of each referenced Secret key's content (a missing Secret or key
// hashes as missing, so its creation rolls the pods too). The key keeps a
// low-entropy credential from being guessed from the annotation by anyone
// who may read the StatefulSet. Values are read uncached (the manager caches
// Secrets as metadata only) and never logged.
func (r *Reconciler) credentialsHash(ctx context.Context, h *v1alpha1.AgentHarness, token string, gatewayCA []byte) (string, error) {
	mac := hmac.New(sha256.New, []byte(token))
	write := func(parts ...string) {
		for _, p := range parts {
			_, _ = fmt.Fprintf(mac, "%d:%s;", len(p), p)
		}
	}
	write("token", token)
	if len(gatewayCA) > 0 {
		write("model-gateway-ca", string(gatewayCA))
	}
	secrets := map[string]*corev1.Secret{}
	for _, ref := range appServerSecretRefs(h) {
		s, seen := secrets[ref.name]
		if !seen {
			s = &corev1.Secret{}
			err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: h.Namespace, Name: ref.name}, s)
			switch {
			case apierrors.IsNotFound(err):
				s = &corev1.Secret{} // no keys
			case err != nil:
				return "", fmt.Errorf("get secret %s: %w", ref.name, err)
			}
			secrets[ref.name] = s
		}
		if v, ok := s.Data[ref.key]; ok {
			write("key", ref.name, ref.key, string(v))
		} else {
			write("missing", ref.name, ref.key)
		}
	}
	return hex.EncodeToString(mac.Sum(nil)[:16]), nil
}

// harnessesForSecret maps a Secret to the harnesses that use it: as the
// external token (spec.external.tokenSecretRef) or in their managed pods
// (credentials, env valueFrom).
func (r *Reconciler) harnessesForSecret(ctx context.Context, o client.Object) []reconcile.Request {
	seen := map[types.NamespacedName]bool{}
	var reqs []reconcile.Request
	if r.ModelGateway.CASecret != "" && o.GetNamespace() == r.OperatorNamespace && o.GetName() == r.ModelGateway.CASecret {
		reqs = r.harnessesWithModelGateway(ctx)
		for _, req := range reqs {
			seen[req.NamespacedName] = true
		}
	}
	for _, index := range []string{indexExternalTokenSecret, indexAppServerSecret} {
		var list v1alpha1.AgentHarnessList
		if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()),
			client.MatchingFields{index: o.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list agent harnesses for a secret", "secret", o.GetName(), "index", index)
			continue
		}
		for _, h := range list.Items {
			key := client.ObjectKeyFromObject(&h)
			if !seen[key] {
				seen[key] = true
				reqs = append(reqs, reconcile.Request{NamespacedName: key})
			}
		}
	}
	return reqs
}

// harnessesWithModelGateway are the harnesses whose pods trust the model
// gateway's CA, enqueued when its Secret changes.
func (r *Reconciler) harnessesWithModelGateway(ctx context.Context) []reconcile.Request {
	var list v1alpha1.AgentHarnessList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list agent harnesses for the model gateway's CA secret")
		return nil
	}
	var reqs []reconcile.Request
	for _, h := range list.Items {
		if h.Spec.ModelGateway != nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&h)})
		}
	}
	return reqs
}
