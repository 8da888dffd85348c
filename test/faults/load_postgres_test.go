//go:build postgres

package faults

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/testutil/dispatchertest"
	"github.com/openclaw/harness-operator/internal/testutil/turnload"
)

// TestRollingRestartAndKillUnderLoad is the many-dispatchers fault campaign
// (docs/reliability.md, "Many dispatchers on PostgreSQL") on processes (`make
// load-replicas`; minutes, not part of CI): three dispatcher replicas on one
// PostgreSQL under continuous load from 20 sessions (internal/testutil/turnload: each turn
// ~1 s of streamed reply, each client acting as a gateway does).
//   - A rolling restart: SIGTERM to one replica at a time while it runs
//     turns, its replacement started and ready before the next: 0 turns
//     fail, 0 are lost, 0 run twice.
//   - A replica SIGKILLed while it runs turns: exactly the turns it had
//     claimed and not finished fail (replaySafe false) once the survivors'
//     sweep ends them; every other turn completes.
//
// test/e2e/system runs the same campaign on the chart's Deployment.
func TestRollingRestartAndKillUnderLoad(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const sessions = 20
	names := make([]string, sessions)
	for i := range names {
		names[i] = "s" + strconv.Itoa(i)
	}
	env := dispatchertest.NewReplicas(ctx, t, "dispatcher-load", names...)
	load := turnload.New(env.Fx.Stub, env.Fx.Gateway)
	procs := map[string]*dispatchertest.Replica{}
	add := func(name string) {
		r := env.Start(name)
		procs[name] = r
		load.Add(turnload.Replica{Name: name, Base: r.Base, Client: r.HC})
	}
	for i := range 3 {
		add("replica-" + strconv.Itoa(i))
	}
	load.Start(ctx, names...)
	defer load.Stop()

	// Rolling restart.
	restartStart := time.Now()
	for i := range 3 {
		old := load.Replicas()[0].Name
		must(t, load.WaitRunning(old, 2, time.Minute))
		load.Remove(old) // new turns go elsewhere; its streams run on while it drains
		running := len(load.RunningOn(old))
		t.Logf("SIGTERM %s with %d turns running on it: %s", old, running, procs[old].Proc.Stop(45*time.Second))
		add("replica-new-" + strconv.Itoa(i))
	}
	restartTook := time.Since(restartStart)
	afterRestart := load.Outcomes()

	// Kill one replica mid-turn.
	victim := load.Replicas()[0].Name
	must(t, load.WaitRunning(victim, 2, time.Minute))
	load.Remove(victim)
	doomed, err := load.RunningOnSettled(victim, time.Minute)
	must(t, err)
	killed := time.Now()
	_ = syscall.Kill(-procs[victim].Proc.Pid(), syscall.SIGKILL)
	must(t, load.WaitEnded(doomed, 90*time.Second))
	endedIn := time.Since(killed)

	load.Stop()
	v := turnload.Judge(turnload.Campaign{
		AfterRestart: afterRestart, All: load.Outcomes(), Doomed: doomed, Sent: load.Sent(),
		Executions: turnload.Executions(env.Fx.Stub),
	})
	for _, msg := range v.Violations {
		t.Error(msg)
	}
	t.Logf("rolling restart of 3 replicas in %s: %d turns, 0 failed; SIGKILL with %d turns running: %d failed (replaySafe false) within %s of the kill; %d turns in all",
		restartTook.Round(time.Second), len(afterRestart), len(doomed), v.FailedDoomed, endedIn.Round(time.Second), v.Turns)
}
