package modelgateway

import (
	"context"
	"sync"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatcher/modelcred"
)

// maxWatchedUpstreams bounds the harnesses a WatchedUpstreams keeps (two
// watches each); past it a harness is read on every request, as
// KubeUpstreams does.
const maxWatchedUpstreams = 4096

// WatchedUpstreams is KubeUpstreams with a cache that never serves a
// changed object: a harness's Upstream is kept only while a metadata watch
// on the AgentHarness and one on its credential Secret, each from the
// resourceVersion that was read, have seen nothing. Any event of either
// (a rotated key, a changed spec, a status write, a deletion), an error or
// the watch's end drops the entry, and the next request reads both again.
// So a rotated key or a deleted harness is seen by the first request after
// the watch event; only a request in the milliseconds between the write
// and its event is served the old value. Failed reads are never kept. A
// watch that cannot start leaves the harness uncached: every request
// reads, as KubeUpstreams. A watch the API server forbids is not tried
// again (the gateway's RBAC grants only get): a refused watch per request
// would cost more than the reads it saves.
//
// Reading both objects on every request cost two API-server round trips
// and most of the gateway's CPU per request (docs/benchmarks/gateway.md).
type WatchedUpstreams struct {
	kube    KubeUpstreams
	watcher client.WithWatch
	log     logr.Logger
	ctx     context.Context
	stop    context.CancelFunc

	mu        sync.Mutex
	entries   map[modelcred.Harness]*watchedUpstream
	failures  int  // watches that could not start, for the log's rate
	forbidden bool // a watch was forbidden: none is tried again
}

type watchedUpstream struct {
	up   Upstream
	stop context.CancelFunc
}

var _ Upstreams = (*WatchedUpstreams)(nil)

// NewWatchedUpstreams reads with r (the API server directly, not a cache)
// and watches with w. Close stops its watches.
func NewWatchedUpstreams(r client.Reader, w client.WithWatch, log logr.Logger) *WatchedUpstreams {
	ctx, stop := context.WithCancel(context.Background())
	return &WatchedUpstreams{kube: KubeUpstreams{Reader: r}, watcher: w, log: log, ctx: ctx, stop: stop,
		entries: map[modelcred.Harness]*watchedUpstream{}}
}

// Close stops every watch; later requests read uncached.
func (w *WatchedUpstreams) Close() { w.stop() }

// Upstream implements Upstreams.
func (w *WatchedUpstreams) Upstream(ctx context.Context, h modelcred.Harness) (Upstream, error) {
	w.mu.Lock()
	e := w.entries[h]
	w.mu.Unlock()
	if e != nil {
		return e.up, nil
	}
	up, versions, err := w.kube.read(ctx, h)
	if err != nil {
		return Upstream{}, err
	}
	w.keep(h, up, versions)
	return up, nil
}

// cached says whether h's Upstream is kept (tests).
func (w *WatchedUpstreams) cached(h modelcred.Harness) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.entries[h] != nil
}

// keep starts the two watches from the versions read and keeps up until
// either sees anything.
func (w *WatchedUpstreams) keep(h modelcred.Harness, up Upstream, v readVersions) {
	w.mu.Lock()
	full := len(w.entries) >= maxWatchedUpstreams || w.entries[h] != nil || w.forbidden
	w.mu.Unlock()
	if full || w.ctx.Err() != nil {
		return
	}
	ctx, stop := context.WithCancel(w.ctx)
	harness, err := w.watch(ctx, "AgentHarnessList", v1alpha1.GroupVersion.String(), h.Namespace, h.Name, v.harness)
	var secret watch.Interface
	if err == nil {
		secret, err = w.watch(ctx, "SecretList", "v1", h.Namespace, v.secretName, v.secret)
		if err != nil {
			harness.Stop()
		}
	}
	if err != nil {
		stop()
		w.mu.Lock()
		w.failures++
		first := w.failures == 1
		w.forbidden = w.forbidden || apierrors.IsForbidden(err)
		w.mu.Unlock()
		if apierrors.IsForbidden(err) {
			w.log.Info("harnesses' upstreams are read on every request: watching them is forbidden (granting watch on AgentHarnesses and Secrets in the harness namespaces lets the gateway keep them)",
				"harness", h.Namespace+"/"+h.Name, "error", err.Error())
		} else if first {
			w.log.Info("the harness's upstream is read on every request until its watch can start",
				"harness", h.Namespace+"/"+h.Name, "error", err.Error())
		}
		return
	}
	e := &watchedUpstream{up: up, stop: stop}
	w.mu.Lock()
	if w.entries[h] != nil { // another request kept it meanwhile
		w.mu.Unlock()
		harness.Stop()
		secret.Stop()
		stop()
		return
	}
	w.entries[h] = e
	w.mu.Unlock()
	go func() {
		defer harness.Stop()
		defer secret.Stop()
		// The first event of either watch, or its end, ends the entry.
		select {
		case <-ctx.Done():
		case <-harness.ResultChan():
		case <-secret.ResultChan():
		}
		w.mu.Lock()
		if w.entries[h] == e {
			delete(w.entries, h)
		}
		w.mu.Unlock()
		stop()
	}()
}

// watch watches the metadata of the one object name in namespace from
// resourceVersion on.
func (w *WatchedUpstreams) watch(ctx context.Context, kind, apiVersion, namespace, name, resourceVersion string) (watch.Interface, error) {
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: kind, APIVersion: apiVersion}}
	return w.watcher.Watch(ctx, list, &client.ListOptions{
		Namespace:     namespace,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name),
		Raw:           &metav1.ListOptions{ResourceVersion: resourceVersion},
	})
}
