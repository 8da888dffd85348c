//go:build faults

package faults

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/testutil/dispatchertest"
)

// activeTurns is each AgentSession's status.activeTurn as the API server
// last showed it, kept by a watch (renewed when it ends, e.g. across an API
// server restart): the campaign asks it many times a second, which a List
// each time could not answer in the milliseconds a phase lasts.
type activeTurns struct {
	mu     sync.Mutex
	byName map[string]string // session → runId of its activeTurn
}

// watchActiveTurns follows the AgentSessions of ns until ctx ends.
func watchActiveTurns(ctx context.Context, fx *dispatchertest.TurnFixture) (*activeTurns, error) {
	wc, err := client.NewWithWatch(fx.Env.Config, client.Options{Scheme: fx.Env.Scheme})
	if err != nil {
		return nil, err
	}
	a := &activeTurns{byName: map[string]string{}}
	go func() {
		for ctx.Err() == nil {
			w, err := wc.Watch(ctx, &v1alpha1.AgentSessionList{}, client.InNamespace(fx.NS))
			if err != nil {
				select { // the API server is away: try again
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			for ev := range w.ResultChan() {
				a.apply(ev)
			}
			w.Stop()
		}
	}()
	return a, nil
}

func (a *activeTurns) apply(ev watch.Event) {
	s, ok := ev.Object.(*v1alpha1.AgentSession)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case ev.Type == watch.Deleted, s.Status.ActiveTurn == nil:
		delete(a.byName, s.Name)
	default:
		a.byName[s.Name] = s.Status.ActiveTurn.RunID
	}
}

// endedButActive counts the sessions whose activeTurn is a turn in ended.
func (a *activeTurns) endedButActive(ended func(runID string) bool) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, runID := range a.byName {
		if ended(runID) {
			n++
		}
	}
	return n
}
