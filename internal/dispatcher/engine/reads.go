package engine

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/externalserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// session reads the AgentSession; the dispatcher's own last write wins over
// a cache that has not seen it yet (one dispatcher writes those fields).
func (e *Engine) session(ctx context.Context, ns, name string) (*v1alpha1.AgentSession, error) {
	s := &v1alpha1.AgentSession{}
	if err := e.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, fmt.Errorf("%w: %s/%s", ErrSessionNotFound, ns, name)
		}
		return nil, fmt.Errorf("dispatch: read AgentSession %s/%s: %w", ns, name, err)
	}
	e.current(s).into(&s.Status)
	return s, nil
}

// sessionForTurn is the session a turn is checked against: session, read
// again from the API server (Options.APIReader) when the cached copy
// contradicts the attempt's model alone. The OpenClaw plugin updates
// spec.model right before a turn on another model; without the second read
// that turn would be refused while this dispatcher's cache lags behind the
// update. The fresh copy is used only when it is the same session (UID).
func (e *Engine) sessionForTurn(ctx context.Context, ns, name string, req *wire.TurnRequest) (*v1alpha1.AgentSession, error) {
	sess, err := e.session(ctx, ns, name)
	if err != nil || e.opts.APIReader == nil {
		return sess, err
	}
	var mismatch *wire.Error
	if err := selection.ValidateAgainstSession(sess, &req.Attempt); !errors.As(err, &mismatch) ||
		mismatch.Code != wire.CodeSessionMismatch || mismatch.Scope != wire.ScopeHarness {
		return sess, nil
	}
	fresh := &v1alpha1.AgentSession{}
	if err := e.opts.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, fresh); err != nil || fresh.UID != sess.UID {
		return sess, nil //nolint:nilerr // the cached copy decides; its refusal names the mismatch
	}
	e.current(fresh).into(&fresh.Status)
	return fresh, nil
}

// serverPods collects the facts PickServer needs about a managed harness:
// its pods and how many sessions hold a place on each (the store's
// reservations — no listing of AgentSessions).
func (e *Engine) serverPods(ctx context.Context, h *v1alpha1.AgentHarness) (ServerPods, error) {
	if h.Spec.External != nil {
		return ServerPods{}, nil
	}
	pods, port, err := e.harnessPods(ctx, h)
	if err != nil {
		return ServerPods{}, err
	}
	out := ServerPods{Pods: pods, Port: port, Bound: map[string]int{}}
	for _, p := range pods {
		n, err := e.store.Reserved(ctx, serverKey(h, p.Name))
		if err != nil {
			return ServerPods{}, fmt.Errorf("count the sessions of app-server pod %s: %w", p.Name, err)
		}
		out.Bound[p.Name] = n
	}
	return out, nil
}

// harnessPods lists a managed harness's own server pods
// (objects.OwnsServerPod: controlled by its StatefulSet, an ordinal
// below replicas) and their app-server port. Only these are sent the
// capability token and turns; a pod that merely carries the labels,
// annotation and name is never used.
func (e *Engine) harnessPods(ctx context.Context, h *v1alpha1.AgentHarness) ([]corev1.Pod, int32, error) {
	sts := &appsv1.StatefulSet{}
	if err := e.reader.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: objects.WorkloadName(h)}, sts); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("read the StatefulSet of AgentHarness %s/%s: %w", h.Namespace, h.Name, err)
	}
	var list corev1.PodList
	if err := e.reader.List(ctx, &list, client.InNamespace(h.Namespace), client.MatchingLabels(objects.SelectorLabels(h))); err != nil {
		return nil, 0, fmt.Errorf("list pods of %s: %w", h.Namespace, err)
	}
	var pods []corev1.Pod
	var port int32
	for _, p := range list.Items {
		if !objects.OwnsServerPod(h, sts, &p) {
			continue
		}
		pods = append(pods, p)
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == objects.PortName {
					port = cp.ContainerPort
				}
			}
		}
	}
	return pods, port, nil
}

// serverAuth reads a harness's token Secret and returns how to
// authenticate to its servers: an external server gets its static token; a
// managed harness's pods get a short-lived token signed with the Secret's
// shared secret, minted for each dial (a reattach long after the turn
// started dials with a fresh one).
func (e *Engine) serverAuth(ctx context.Context, h *v1alpha1.AgentHarness) (appserver.WebSocketOptions, error) {
	name, key := objects.TokenSecretName(h), objects.TokenSecretKey
	if h.Spec.External != nil {
		name, key = h.Spec.External.TokenSecretRef.Name, h.Spec.External.TokenSecretRef.Key
	}
	s := &corev1.Secret{}
	if err := e.reader.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: name}, s); err != nil {
		return appserver.WebSocketOptions{}, fmt.Errorf("read the token Secret %s/%s of AgentHarness %s: %w", h.Namespace, name, h.Name, err)
	}
	if h.Spec.External == nil && !metav1.IsControlledBy(s, h) {
		// A Secret of the generated name that the manager did not create
		// (it never adopts one) holds no token of this harness.
		return appserver.WebSocketOptions{}, fmt.Errorf("the token Secret %s/%s is not controlled by AgentHarness %s", h.Namespace, name, h.Name)
	}
	tok := string(s.Data[key])
	if tok == "" {
		return appserver.WebSocketOptions{}, fmt.Errorf("the token Secret %s/%s of AgentHarness %s has no key %q", h.Namespace, name, h.Name, key)
	}
	if h.Spec.External != nil {
		return externalserver.DialOptions(h.Spec.External, tok, e.opts.ExternalDial)
	}
	return appserver.WebSocketOptions{SignedBearer: appserver.ManagedServerAuth(tok)}, nil
}
