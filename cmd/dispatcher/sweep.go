package main

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
)

// defaultSweepInterval: with the session lease's 30 s, a dead replica's turn
// ends within 40 s.
const defaultSweepInterval = 10 * time.Second

// sweeper ends, every interval, the turns of replicas sharing the store that
// died (Engine.Sweep). Every replica sweeps: there is no leader to lose, and
// a sweep is idempotent — two replicas sweeping one run end it once.
type sweeper struct {
	engine   *engine.Engine
	interval time.Duration
	log      logr.Logger
}

var _ manager.LeaderElectionRunnable = (*sweeper)(nil)

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (*sweeper) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (s *sweeper) Start(ctx context.Context) error {
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if ended, err := s.engine.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Error(err, "sweep the turns of dispatchers that stopped", "ended", len(ended))
		}
	}
}
