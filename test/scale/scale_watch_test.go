package scale

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/platform/scheme"
)

// watchPoll is how often a wait re-reads what the watch has seen; the
// times a wait returns come from the watch events themselves.
const watchPoll = 50 * time.Millisecond

// sessionSeen is what the watch has seen of one AgentSession.
type sessionSeen struct {
	// writes counts the writes since its creation: every resourceVersion
	// the watch delivered after the ADDED one (the API server sends one
	// event per write, in order).
	writes int
	// at is when its latest event arrived.
	at                 time.Time
	ready, finalized   bool
	runtime            v1alpha1.RuntimeID
	source             v1alpha1.PolicySource
	resolvedMessage    string
	observedGeneration int64
}

// sessionWatch watches every AgentSession from the benchmark's own
// connection and keeps, per session, its writes and the manager's verdict;
// it re-watches from the last resourceVersion when the API server ends a
// watch.
type sessionWatch struct {
	mu       sync.Mutex
	sessions map[types.NamespacedName]*sessionSeen
	// lastWrite is when the latest write to any session arrived.
	lastWrite time.Time
	err       error
}

// watchSessions starts a sessionWatch that lives as long as ctx.
func watchSessions(ctx context.Context, cfg *rest.Config) (*sessionWatch, error) {
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, err
	}
	w := &sessionWatch{sessions: map[types.NamespacedName]*sessionSeen{}}
	wi, err := c.Watch(ctx, &v1alpha1.AgentSessionList{}, &client.ListOptions{Raw: &metav1.ListOptions{AllowWatchBookmarks: true}})
	if err != nil {
		return nil, fmt.Errorf("watch AgentSessions: %w", err)
	}
	go func() {
		for {
			rv, err := w.consume(wi)
			if err == nil && ctx.Err() == nil {
				wi, err = c.Watch(ctx, &v1alpha1.AgentSessionList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})
			}
			if err != nil || ctx.Err() != nil {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				return
			}
		}
	}()
	return w, nil
}

// consume records the events of one watch until the API server ends it and
// returns the last resourceVersion it saw.
func (w *sessionWatch) consume(wi watch.Interface) (string, error) {
	defer wi.Stop()
	rv := ""
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			return rv, fmt.Errorf("watch of AgentSessions failed: %v", ev.Object)
		}
		s, ok := ev.Object.(*v1alpha1.AgentSession)
		if !ok {
			continue
		}
		rv = s.ResourceVersion
		if ev.Type == watch.Added || ev.Type == watch.Modified {
			w.record(s, ev.Type == watch.Modified)
		}
	}
	return rv, nil
}

func (w *sessionWatch) record(s *v1alpha1.AgentSession, write bool) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	key := client.ObjectKeyFromObject(s)
	seen := w.sessions[key]
	if seen == nil {
		seen = &sessionSeen{}
		w.sessions[key] = seen
	}
	if write {
		seen.writes++
		w.lastWrite = now
	}
	seen.at = now
	seen.ready = meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.SessionConditionReady)
	seen.finalized = controllerutil.ContainsFinalizer(s, v1alpha1.JournalFinalizer)
	seen.observedGeneration = s.Status.ObservedGeneration
	seen.runtime, seen.source, seen.resolvedMessage = "", "", ""
	if p := s.Status.Policy; p != nil {
		seen.runtime, seen.source = p.Runtime, p.Source
	}
	if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.SessionConditionPolicyResolved); c != nil {
		seen.resolvedMessage = c.Message
	}
}

// waitAll waits until want holds for the n sessions which chooses (nil:
// all), and returns when the event that made the last of them hold arrived.
func (w *sessionWatch) waitAll(ctx context.Context, timeout time.Duration, n int, which func(types.NamespacedName) bool, want func(types.NamespacedName, *sessionSeen) bool) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		var last time.Time
		holding, total := 0, 0
		w.mu.Lock()
		err := w.err
		for key, s := range w.sessions {
			if which != nil && !which(key) {
				continue
			}
			total++
			if want(key, s) {
				holding++
				if s.at.After(last) {
					last = s.at
				}
			}
		}
		w.mu.Unlock()
		switch {
		case total == n && holding == n:
			return last, nil
		case err != nil:
			return time.Time{}, err
		case time.Now().After(deadline):
			return time.Time{}, fmt.Errorf("after %s, %d of %d sessions hold (%d seen)", timeout, holding, n, total)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(watchPoll):
		}
	}
}

// quiet waits until no session has been written for quietFor: the writes a
// change caused have all arrived (a benchmark's window, not a test's proof).
func (w *sessionWatch) quiet(ctx context.Context, quietFor time.Duration) error {
	for {
		w.mu.Lock()
		since := time.Since(w.lastWrite)
		w.mu.Unlock()
		if since >= quietFor {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(quietFor - since):
		}
	}
}

// writeCounts are the writes per session seen so far.
type writeCounts map[types.NamespacedName]int

func (w *sessionWatch) writes() writeCounts {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(writeCounts, len(w.sessions))
	for key, s := range w.sessions {
		out[key] = s.writes
	}
	return out
}

// since is the writes per session after before was taken.
func (c writeCounts) since(before writeCounts) writeCounts {
	out := make(writeCounts, len(c))
	for key, n := range c {
		out[key] = n - before[key]
	}
	return out
}

// split sums the writes of the sessions affected says are affected and of
// the others, and gives the most any affected session got.
func (c writeCounts) split(affected func(types.NamespacedName) bool) (toAffected, maxPerAffected, toUnaffected int) {
	for key, n := range c {
		if affected(key) {
			toAffected += n
			maxPerAffected = max(maxPerAffected, n)
		} else {
			toUnaffected += n
		}
	}
	return toAffected, maxPerAffected, toUnaffected
}

// seen is a copy of what the watch has seen of one session.
func (w *sessionWatch) seen(key types.NamespacedName) (sessionSeen, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s, ok := w.sessions[key]
	if !ok {
		return sessionSeen{}, false
	}
	return *s, true
}

// keys are the sessions seen, sorted.
func (w *sessionWatch) keys() []types.NamespacedName {
	w.mu.Lock()
	out := make([]types.NamespacedName, 0, len(w.sessions))
	for key := range w.sessions {
		out = append(out, key)
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
	return out
}
