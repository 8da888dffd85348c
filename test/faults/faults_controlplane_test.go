//go:build faults

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
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
			// run a while, lastTurn and the counters at its end): the
			// dispatcher retries the write until it lands, and the session's
			// next turn waits for it. With reviews cached and selection read
			// from an informer, an outage may refuse no turn at all; the
			// turns running across it still need their status writes.
			retried := statusRetries(c.t, d, from, to)
			return func() (string, bool) {
				refused := refusals(c.load.Refusals()) - refusedBefore
				ends := retried[endStatusRetry]
				// A retried end that never lands is a turn the session's
				// status lost (its lastTurn and counters), not only no effect.
				for _, id := range endsNotLanded(c.t, d, from, ends, time.Minute) {
					c.t.Errorf("kube-apiserver restarted: the end status of turn %s was retried and did not land; the dispatcher logged:\n%s", id, logRecordsOf(d, from, id))
				}
				writes := len(retried[activeTurnRetry]) + len(ends)
				found := fmt.Sprintf("%s; %d turns refused and waited out; the status writes of %d turns failed while it was away and were retried, %d of them a turn's end, each landed since",
					ended, refused, writes, len(ends))
				return found, refused > 0 || writes > 0
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

// The dispatcher's log messages about a turn's status writes
// (internal/dispatcher/engine: writeStatus, finish): a write that failed
// and will be tried again, of the turn's activeTurn (given up once the turn
// ended) or of its end (lastTurn and the counters, tried until it lands);
// the prefix of the end's write given up (a retry cannot succeed, or the
// session's lease was lost); and the turn's end, logged once the end's
// write returned.
const (
	activeTurnRetry = "apply activeTurn failed; retrying"
	endStatusRetry  = "apply turn status failed; retrying"
	endStatusGiveUp = "apply turn status failed; not retried"
	turnEnded       = "turn ended"
)

// logSize is where p's next log record begins.
func logSize(p *testutil.Process) int64 {
	fi, err := os.Stat(p.LogPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logRecord is what the campaign reads of a dispatcher's JSON log record.
type logRecord struct {
	Msg   string `json:"msg"`
	RunID string `json:"runId"`
}

// turnRecords are the records about a turn that p logged from offset from
// to offset to (-1: to the end); a line that is not a JSON record, or that
// to cuts, is skipped.
func turnRecords(t *testing.T, p *testutil.Process, from, to int64) []logRecord {
	t.Helper()
	b, err := os.ReadFile(p.LogPath)
	must(t, err)
	if to < 0 || to > int64(len(b)) {
		to = int64(len(b))
	}
	return decodeRecords(b[min(from, to):to])
}

// decodeRecords are the records about a turn in b, a line each; a line
// that is not a JSON record is skipped.
func decodeRecords(b []byte) []logRecord {
	var recs []logRecord
	for _, line := range bytes.Split(b, []byte("\n")) {
		var rec logRecord
		if json.Unmarshal(line, &rec) == nil && rec.RunID != "" {
			recs = append(recs, rec)
		}
	}
	return recs
}

// statusRetries returns the runIds of the turns whose status write p logged
// as failed and retried from offset from to offset to, by the record's
// message (activeTurnRetry, endStatusRetry).
func statusRetries(t *testing.T, p *testutil.Process, from, to int64) map[string][]string {
	byMsg, seen := map[string][]string{}, map[string]bool{}
	for _, rec := range turnRecords(t, p, from, to) {
		key := rec.Msg + "/" + rec.RunID
		if (rec.Msg == activeTurnRetry || rec.Msg == endStatusRetry) && !seen[key] {
			seen[key] = true
			byMsg[rec.Msg] = append(byMsg[rec.Msg], rec.RunID)
		}
	}
	return byMsg
}

// endsNotLanded waits, up to timeout, until p has logged (from offset from
// on) the end of each turn of runIDs, and returns those whose end status p
// gave up on or whose end it has not logged by then. A turn's end is logged
// after its end status's write returned, and that write, retried, returns
// only once it landed or with a give-up record: a logged end without one is
// an end status that landed.
func endsNotLanded(t *testing.T, p *testutil.Process, from int64, runIDs []string, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	ended, gaveUp := map[string]bool{}, map[string]bool{}
	for {
		// Only what was logged since the last poll: a campaign's log is
		// large, and it grows while this waits.
		var recs []logRecord
		recs, from = recordsSince(t, p, from)
		for _, rec := range recs {
			ended[rec.RunID] = ended[rec.RunID] || rec.Msg == turnEnded
			gaveUp[rec.RunID] = gaveUp[rec.RunID] || strings.HasPrefix(rec.Msg, endStatusGiveUp)
		}
		var not []string
		for _, id := range runIDs {
			if gaveUp[id] || !ended[id] {
				not = append(not, id)
			}
		}
		if len(not) == 0 || time.Now().After(deadline) {
			return not
		}
		time.Sleep(100 * time.Millisecond) // the poll's interval; the log's records are the proof
	}
}

// recordsSince decodes the whole lines p logged from offset from on and
// returns them with the offset after the last one.
func recordsSince(t *testing.T, p *testutil.Process, from int64) ([]logRecord, int64) {
	t.Helper()
	f, err := os.Open(p.LogPath)
	must(t, err)
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.NewSectionReader(f, from, math.MaxInt64-from))
	must(t, err)
	whole := int64(bytes.LastIndexByte(b, '\n') + 1) // a line still being written waits for the next poll
	return decodeRecords(b[:whole]), from + whole
}

// logRecordsOf is what p logged about turn runID from offset from on.
func logRecordsOf(p *testutil.Process, from int64, runID string) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil || int64(len(b)) < from {
		return fmt.Sprintf("(log %s unreadable: %v)", p.LogPath, err)
	}
	var out []string
	for _, line := range strings.Split(string(b[from:]), "\n") {
		if strings.Contains(line, `"runId":"`+runID+`"`) {
			out = append(out, fmt.Sprintf("%.1000s", line))
		}
	}
	return strings.Join(out, "\n")
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
