//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/testutil"
)

// controlPlane is the campaign's manager: two bin/manager processes with
// leader election on, as the chart runs them, their admission webhooks
// reached by the API server through a proxy the test can take down.
type controlPlane struct {
	t          *testing.T
	work       string
	built      chan error
	kubeconfig string
	webhook    *testutil.CutProxy // the webhooks' Service: the first manager that answers
	ports      [2]int             // the managers' webhook ports
	managers   [2]*testutil.Process
	instances  int
	churn      *churn
	figures    map[string]*churnFigures // by fault
	order      []string
}

// newControlPlane starts building bin/manager; start runs it.
func newControlPlane(t *testing.T) *controlPlane {
	cp := &controlPlane{t: t, work: t.TempDir(), built: make(chan error, 1), figures: map[string]*churnFigures{}}
	go func() { cp.built <- testutil.BuildBinaries(filepath.Join(cp.work, "bin"), "./cmd/manager") }()
	t.Cleanup(cp.report)
	return cp
}

// start installs the webhooks behind the proxy and starts both managers,
// ns their harness namespace (the fixture's controllers option).
func (cp *controlPlane) start(env *testutil.Env, ns string) {
	t := cp.t
	must(t, <-cp.built)
	var err error
	cp.kubeconfig, err = env.AdminKubeconfig(cp.work)
	must(t, err)
	for i := range cp.ports {
		cp.ports[i], err = testutil.FreePort()
		must(t, err)
	}
	cp.webhook, err = testutil.StartCutProxy("127.0.0.1:"+strconv.Itoa(cp.ports[0]), "127.0.0.1:"+strconv.Itoa(cp.ports[1]))
	must(t, err)
	t.Cleanup(func() { _ = cp.webhook.Close() })
	must(t, testutil.InstallManagerWebhooks(context.Background(), env, "https://localhost:"+portOf(cp.webhook.Addr())))
	for i := range cp.managers {
		cp.startManager(i, ns)
	}
	cp.churn = newChurn(env.Client, ns)
}

// startManager starts the manager of slot i (a standby when the other
// leads).
func (cp *controlPlane) startManager(i int, ns string) {
	cp.instances++
	p, err := testutil.StartManagerProcess(testutil.ManagerProcess{
		Name: "manager-" + strconv.Itoa(i) + "." + strconv.Itoa(cp.instances), Bin: filepath.Join(cp.work, "bin", "manager"),
		Kubeconfig: cp.kubeconfig, LogDir: cp.work, CertDir: filepath.Join(cp.work, "webhook-certs-"+strconv.Itoa(i)),
		WebhookPort: cp.ports[i], LeaderElect: true, HarnessNamespaces: []string{ns},
	})
	must(cp.t, err)
	cp.t.Cleanup(func() { p.Stop(30 * time.Second) })
	cp.managers[i] = p
}

// leader is the slot of the manager that holds the Lease: its log says it
// started the controllers, which run on the leader only.
func (cp *controlPlane) leader() (int, error) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for i, p := range cp.managers {
			if strings.Contains(p.Tail(4<<20), `"msg":"Starting workers","controller":"agentsession"`) {
				return i, nil
			}
		}
		time.Sleep(100 * time.Millisecond) // the poll's interval; the log line is the fact
	}
	return 0, fmt.Errorf("no manager acquired the Lease within a minute")
}

// controlPlaneFaults are the faults of the Kubernetes control plane the
// dispatcher and the controllers depend on.
func (c *campaign) controlPlaneFaults() []fault {
	return []fault{
		{"kube-apiserver restarted (down 1–3 s, same etcd, certificates and keys)", atOnce(func() effect {
			refusedBefore := refusals(c.load.Refusals())
			d := c.d.Proc // the dispatcher serving the load; its log says which writes failed
			from := logSize(d)
			down, start := time.Duration(1000+rand.IntN(2000))*time.Millisecond, time.Now()
			ended, err := c.env.Fx.Env.RestartAPIServer(down)
			must(c.t, err)
			to := logSize(d)
			c.t.Logf("kube-apiserver restarted: %s, down %s, unreachable for %s in all", ended, down, time.Since(start).Round(time.Millisecond))
			// While it is away, work that needs it is refused or retried.
			// A turn posted with a token the dispatcher has not checked
			// recently, or one it cannot claim, is refused (AuthUnavailable,
			// HarnessUnavailable), and the gateway waits it out. A running
			// turn cannot write its session's status (activeTurn once it has
			// run a while, lastTurn at its end): the dispatcher retries the
			// write until it lands, and the session's next turn waits for
			// it. Reviews cached, and selection read from an informer, a
			// turn may need no refusal at all; the turns running across the
			// outage still need their status writes.
			retried := statusRetries(c.t, d, from, to)
			return func() (string, bool) {
				refused := refusals(c.load.Refusals()) - refusedBefore
				ends := retried[endStatusRetry]
				// A retried end of a turn that never reaches its session's
				// status is a turn lost to the session, not only no effect.
				for _, id := range c.active.unrecorded(ends, time.Minute) {
					c.t.Errorf("kube-apiserver restarted: turn %s's end never reached its session's status, though its write was retried", id)
				}
				found := fmt.Sprintf("%s; %d turns refused and waited out; the status writes of %d turns failed while it was away and were retried (%d ends, each in its session's status since)",
					ended, refused, len(retried[activeTurnRetry])+len(ends), len(ends))
				return found, refused > 0 || len(retried[activeTurnRetry])+len(ends) > 0
			}
		})},
		{webhookFault, func(strike func()) effect {
			f := c.cp.duringChurn(webhookFault, func() time.Time {
				strike()
				must(c.t, c.cp.webhook.Down())
				time.Sleep(time.Duration(1000+rand.IntN(2000)) * time.Millisecond) // the outage itself, not an ordering
				must(c.t, c.cp.webhook.Up())
				return time.Now()
			})
			// The applies made while it was down are refused, naming it.
			return func() (string, bool) {
				return fmt.Sprintf("%d applies refused, naming the webhook", f.refusedVisibly), f.refusedVisibly > 0
			}
		}},
		{managerFault, func(strike func()) effect {
			var stopped string
			c.cp.duringChurn(managerFault, func() time.Time {
				i, err := c.cp.leader()
				must(c.t, err)
				strike()
				killed := c.cp.managers[i]
				at := time.Now()
				_ = syscall.Kill(-killed.Pid(), syscall.SIGKILL)
				stopped = killed.Stop(10 * time.Second)
				c.cp.startManager(i, c.env.NS)
				return at
			})
			// The leader died of the SIGKILL, without releasing the Lease,
			// and one of the processes that were not leading then took it
			// (the killed one's slot holds its replacement).
			return func() (string, bool) {
				i, err := c.cp.leader()
				if err != nil {
					return stopped + "; " + err.Error(), false
				}
				return stopped + "; " + c.cp.managers[i].Name + " leads now", diedOfSIGKILL(stopped)
			}
		}},
	}
}

// The dispatcher's log messages for a status write that failed and will be
// tried again (internal/dispatcher/engine, writeStatus): the write of a
// turn's activeTurn, given up once the turn ended, and the write of its end
// (lastTurn), retried until it lands.
const (
	activeTurnRetry = "apply activeTurn failed; retrying"
	endStatusRetry  = "apply turn status failed; retrying"
)

// logSize is where p's next log record begins.
func logSize(p *testutil.Process) int64 {
	fi, err := os.Stat(p.LogPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// statusRetries reads the records p logged from offset from to offset to
// and returns the runIds of the turns whose status write failed there and
// was retried, by the record's message (activeTurnRetry, endStatusRetry).
func statusRetries(t *testing.T, p *testutil.Process, from, to int64) map[string][]string {
	t.Helper()
	f, err := os.Open(p.LogPath)
	must(t, err)
	defer func() { _ = f.Close() }()
	b := make([]byte, to-from)
	_, err = f.ReadAt(b, from)
	must(t, err)
	byMsg, seen := map[string][]string{}, map[string]bool{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var rec struct {
			Msg   string `json:"msg"`
			RunID string `json:"runId"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.RunID == "" || (rec.Msg != activeTurnRetry && rec.Msg != endStatusRetry) {
			continue // not a JSON record (or cut at to), or another record
		}
		if key := rec.Msg + "/" + rec.RunID; !seen[key] {
			seen[key] = true
			byMsg[rec.Msg] = append(byMsg[rec.Msg], rec.RunID)
		}
	}
	return byMsg
}

// refusals is how many answers the gateways waited out in all.
func refusals(byCode map[string]int) int {
	n := 0
	for _, k := range byCode {
		n += k
	}
	return n
}

const (
	webhookFault = "webhook server unreachable during applies (1–3 s)"
	managerFault = "leading manager SIGKILLed during policy and session churn, restarted as the standby"
)

// duringChurn runs fault while the churn applies changes: some accepted
// before and after it, then every object is read back and the statuses'
// catching up with their generations is timed from when fault says the
// fault ended. It returns the churn's figures of this injection.
func (cp *controlPlane) duringChurn(name string, fault func() (ended time.Time)) churnFigures {
	t, ctx := cp.t, context.Background()
	cp.churn.mark()
	cp.churn.start(ctx)
	must(t, cp.churn.waitAccepted(5, time.Minute))
	ended := fault()
	cp.churn.mark()
	must(t, cp.churn.waitAccepted(5, time.Minute))
	for _, bad := range cp.churn.stopAndCheck(ctx) {
		t.Errorf("%s: half-applied: %s", name, bad)
	}
	took, err := cp.churn.converged(ctx, ended, 2*time.Minute)
	if err != nil {
		t.Errorf("%s: %v", name, err)
	}
	f := cp.churn.take()
	sum, ok := cp.figures[name]
	if !ok {
		sum = &churnFigures{unclear: map[string]int{}}
		cp.figures[name] = sum
		cp.order = append(cp.order, name)
	}
	sum.accepted += f.accepted
	sum.refusedVisibly += f.refusedVisibly
	sum.refusedOther += f.refusedOther
	sum.halfApplied += f.halfApplied
	for m, n := range f.unclear {
		sum.unclear[m] += n
	}
	if err == nil {
		sum.convergence = append(sum.convergence, took)
	}
	return f
}

// report logs the churn's table: one row per fault that churned.
func (cp *controlPlane) report() {
	if len(cp.order) == 0 {
		return
	}
	t := cp.t
	t.Logf("| fault | applies accepted | refused, naming the webhook | refused otherwise | half-applied | status at generation again p50 / max |")
	t.Logf("|---|---|---|---|---|---|")
	for _, name := range cp.order {
		f := cp.figures[name]
		t.Logf("| %s | %d | %d | %d | %d | %s |", name, f.accepted, f.refusedVisibly, f.refusedOther, f.halfApplied, recoveryFigure(f.convergence))
		msgs := make([]string, 0, len(f.unclear))
		for m := range f.unclear {
			msgs = append(msgs, m)
		}
		sort.Strings(msgs)
		for _, m := range msgs {
			t.Logf("%s: refused otherwise %d× %.300s", name, f.unclear[m], m)
		}
	}
}

func portOf(addr string) string { return addr[strings.LastIndex(addr, ":")+1:] }
