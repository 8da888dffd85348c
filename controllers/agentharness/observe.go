package agentharness

import (
	"context"
	"fmt"
	"net"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/harness/externalserver"
	"github.com/openclaw/harness-operator/internal/harness/objects"
)

// externalServerName is the name of an external harness's one server.
const externalServerName = "external"

// observedServer is one server pod as the kubelet reports it.
type observedServer struct {
	name    string
	ordinal int
	podIP   string
	// imageID is what the kubelet reports for the app-server container;
	// digest is its `sha256:…` part.
	imageID string
	digest  string
	state   v1alpha1.ServerState
	// sandbox is the pod's sandbox check (only with a sandbox asked for).
	sandbox sandboxState
}

// observeServers lists the harness's server pods: the pods its selector
// matches that are its own (objects.OwnsServerPod: controlled by its
// StatefulSet, an ordinal below replicas). The handshake sends the capability
// token to these pods, so a pod that only carries the labels is ignored.
func (r *Reconciler) observeServers(ctx context.Context, s *scope) error {
	h := s.harness
	sts := &appsv1.StatefulSet{}
	err := r.Get(ctx, types.NamespacedName{Namespace: h.Namespace, Name: objects.WorkloadName(h)}, sts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get statefulset: %w", err)
	}
	var pods corev1.PodList
	if err := r.pods.List(ctx, &pods, client.InNamespace(h.Namespace), client.MatchingLabels(objects.SelectorLabels(h))); err != nil {
		return fmt.Errorf("list server pods: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !objects.OwnsServerPod(h, sts, p) {
			continue
		}
		ord, _ := objects.PodOrdinal(h, p.Name)
		s.servers = append(s.servers, observePod(p, ord))
	}
	slices.SortFunc(s.servers, func(a, b observedServer) int { return a.ordinal - b.ordinal })
	return nil
}

func observePod(p *corev1.Pod, ordinal int) observedServer {
	srv := observedServer{name: p.Name, ordinal: ordinal, podIP: p.Status.PodIP, sandbox: observeSandbox(p)}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == objects.ContainerName {
			srv.imageID = cs.ImageID
			srv.digest = imageDigest(cs.ImageID)
		}
	}
	switch {
	case p.DeletionTimestamp != nil:
		srv.state = v1alpha1.ServerTerminating
	case p.Status.Phase == corev1.PodRunning && podReady(p):
		srv.state = v1alpha1.ServerReady
	default:
		srv.state = v1alpha1.ServerNotReady
	}
	return srv
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// imageDigest is the digest in an imageID as kubelets report it
// (`repo@sha256:…`, `docker-pullable://repo@sha256:…`, or `sha256:…`).
func imageDigest(imageID string) string {
	if _, rest, ok := strings.Cut(imageID, "://"); ok {
		imageID = rest
	}
	if i := strings.LastIndex(imageID, "@"); i >= 0 {
		imageID = imageID[i+1:]
	}
	if !strings.Contains(imageID, ":") {
		return ""
	}
	return imageID
}

// handshakeServers performs one handshake per image digest that has no
// result yet (or whose failure is due for a retry), with the first Ready pod
// that runs it.
func (r *Reconciler) handshakeServers(ctx context.Context, s *scope) error {
	h := s.harness
	nn := client.ObjectKeyFromObject(h)
	fp := tokenFingerprint(s.token)
	now := r.now()
	s.results = map[string]*handshakeResult{}
	inUse := map[string]bool{}
	attempted := map[string]bool{}
	for _, srv := range s.servers {
		if srv.digest == "" {
			continue
		}
		inUse[srv.digest] = true
		res := s.results[srv.digest]
		if res == nil {
			res = r.results.lookup(nn, h.UID, srv.digest)
		}
		if srv.state == v1alpha1.ServerReady && srv.podIP != "" && !attempted[srv.digest] &&
			needsHandshake(res, fp, now) {
			attempted[srv.digest] = true
			url := "ws://" + net.JoinHostPort(srv.podIP, strconv.Itoa(int(r.AppServerPort)))
			res = r.runHandshake(ctx, srv.name, url, s.token, managedServerAuth(s.token), res)
			r.results.store(nn, h.UID, srv.digest, *res)
		}
		if res != nil {
			s.results[srv.digest] = res
		}
	}
	r.results.retain(nn, h.UID, inUse)
	for _, res := range s.results {
		if res.err != nil {
			s.requeue(res.retryAt.Sub(now))
		}
	}
	return nil
}

// runHandshake performs a handshake with auth and records its outcome; token
// (the secret auth is made of) keys the retry of failures.
func (r *Reconciler) runHandshake(ctx context.Context, server, url, token string, auth appserver.WebSocketOptions,
	prev *handshakeResult) *handshakeResult {
	log := ctrl.LoggerFrom(ctx).WithValues("server", server, "url", redactURL(url))
	fp := tokenFingerprint(token)
	facts, err := r.handshake(ctx, url, auth)
	res := &handshakeResult{server: server, userAgent: facts.userAgent, login: facts.login, catalog: facts.catalog, err: err, tokenFP: fp}
	if err == nil {
		log.Info("app-server handshake", "userAgent", facts.userAgent, "catalogModels", len(facts.catalog), "catalogKnown", facts.catalog != nil)
		return res
	}
	res.failures = 1
	if prev != nil && prev.err != nil && prev.tokenFP == fp {
		res.failures = prev.failures + 1
	}
	delay := retryDelay(res.failures)
	res.retryAt = r.now().Add(delay)
	log.Info("app-server handshake failed", "error", err.Error(), "failures", res.failures, "retryIn", delay.String())
	return res
}

// redactURL hides credentials in a URL for logs.
func redactURL(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// readExternalToken reads the external server's token from tokenSecretRef.
func (r *Reconciler) readExternalToken(ctx context.Context, s *scope) error {
	h := s.harness
	ref := h.Spec.External.TokenSecretRef
	var secret corev1.Secret
	err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: h.Namespace, Name: ref.Name}, &secret)
	switch {
	case apierrors.IsNotFound(err):
		s.tokenMissing = fmt.Sprintf("Secret %q (spec.external.tokenSecretRef) does not exist", ref.Name)
		return nil
	case err != nil:
		return fmt.Errorf("get secret %s: %w", ref.Name, err)
	}
	token := strings.TrimSpace(string(secret.Data[ref.Key]))
	if token == "" {
		s.tokenMissing = fmt.Sprintf("Secret %q (spec.external.tokenSecretRef) has no non-empty key %q", ref.Name, ref.Key)
		return nil
	}
	s.token = token
	return nil
}

// probeExternal GETs the external server's /readyz; it runs on every
// reconcile and at least every externalProbeInterval.
func (r *Reconciler) probeExternal(ctx context.Context, s *scope) error {
	s.requeue(externalProbeInterval)
	u, err := readyzURL(s.harness.Spec.External.URL)
	if err != nil {
		s.probeErr = err
		return nil
	}
	if s.externalDial, err = externalserver.DialOptions(s.harness.Spec.External, s.token, r.ExternalDial); err != nil {
		s.probeErr = err
		return nil
	}
	s.probeErr = r.probe(ctx, u, s.externalDial.Client())
	if s.probeErr != nil {
		ctrl.LoggerFrom(ctx).Info("external app-server probe failed", "url", u, "error", s.probeErr.Error())
	}
	return nil
}

// handshakeExternal performs the handshake once per URL and generation (and
// again when a failed one is due or the token changed), once /readyz answers.
func (r *Reconciler) handshakeExternal(ctx context.Context, s *scope) error {
	h := s.harness
	nn := client.ObjectKeyFromObject(h)
	now := r.now()
	key := h.Spec.External.URL + "#" + strconv.FormatInt(h.Generation, 10)
	res := r.results.lookup(nn, h.UID, key)
	if s.tokenMissing == "" && s.probeErr == nil && needsHandshake(res, tokenFingerprint(s.token), now) {
		res = r.runHandshake(ctx, externalServerName, h.Spec.External.URL, s.token, s.externalDial, res)
		r.results.store(nn, h.UID, key, *res)
	}
	r.results.retain(nn, h.UID, map[string]bool{key: true})
	s.external = res
	if res != nil && res.err != nil {
		s.requeue(res.retryAt.Sub(now))
	}
	return nil
}
