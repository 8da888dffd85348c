//go:build faults

package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/dispatchertest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
	"github.com/openclaw/harness-operator/internal/testutil/tmpfs"
	"github.com/openclaw/harness-operator/internal/testutil/turnload"
)

// campaignInjections is how often each fault is injected (FAULT_INJECTIONS
// overrides it); a campaign of that many or more must also find turns in
// every phase at minPerPhase injections of each fault (docs/reliability.md).
const campaignInjections, minPerPhase = 4, 3

// TestFaultCampaign is the fault campaign on processes (docs/reliability.md;
// `make test-faults`; `make test-e2e` runs it with 1 injection): one dispatcher
// process on the file journal (on a volume of its own), the real Codex
// app-server behind a loopback proxy the test can cut, the stub model, and
// 20 sessions running turns without pause, each turn calling the host tool
// turnload.ProbeTool and running a shell command that needs the gateway's
// approval (each answered 300 ms later by the client) before ~1 s of
// streamed text. Each fault is injected several times at a random moment
// when every phase has a turn in it; the census of the running turns'
// phases at each injection says where it landed. Then every turn is
// accounted for: completed, failed visibly (an error event, or a result
// that is not ok), lost (sent, never ended), executed twice (the model saw
// its first request twice), a tool call delivered twice, an approved
// command run twice (or by a turn refused as safe to replay), a completed
// turn missing from the transcript, a session left with an activeTurn or
// unable to run its next turn. Each injection must also show that it
// struck (effect): at 1 injection nothing else would tell an injection that
// did nothing from a fault the system survived.
func TestFaultCampaign(t *testing.T) {
	started := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	names := make([]string, 20)
	for i := range names {
		names[i] = "f" + strconv.Itoa(i)
	}
	commands := t.TempDir() // where the approved commands write
	codexArgs := []string{"-c", `sandbox_mode="workspace-write"`, "-c", "sandbox_workspace_write.writable_roots=[" + strconv.Quote(commands) + "]"}
	var proxy *testutil.CutProxy
	cp := newControlPlane(t)
	env := dispatchertest.NewProcesses(ctx, t, "dispatcher-faults", dispatchertest.Options{Controllers: cp.start, HarnessURL: func(codexURL string) string {
		p, err := testutil.StartCutProxy(strings.TrimPrefix(codexURL, "ws://"))
		must(t, err)
		t.Cleanup(func() { _ = p.Close() })
		proxy = p
		return "ws://" + p.Addr()
	}, CodexArgs: codexArgs}, names...)
	active, err := watchActiveTurns(ctx, env.Fx)
	must(t, err)
	// The journal lives on a volume of its own that the disk-full fault
	// fills, as a PVC runs full.
	c := &campaign{t: t, env: env, proxy: proxy, cp: cp, codexArgs: codexArgs, journalDir: tmpfs.Mount(t, journalVolume), active: active}
	c.d = c.startDispatcher()
	c.load = turnload.New(env.Fx.Stub, env.Fx.Gateway).WithHostTool(300 * time.Millisecond).WithApprovals(commands)
	c.load.Add(c.replica())
	c.load.Start(ctx, names...)
	defer c.load.Stop()

	injections := campaignInjections
	if n, err := strconv.Atoi(os.Getenv("FAULT_INJECTIONS")); err == nil && n > 0 {
		injections = n
	}
	only := regexp.MustCompile(os.Getenv("FAULTS")) // empty: every fault
	// Where a slow run spends its time: the start here, each fault in the
	// table's last column.
	t.Logf("the campaign's processes and load started in %s", time.Since(started).Round(100*time.Millisecond))
	var rows []faultRow
	for _, f := range append(c.processFaults(), c.controlPlaneFaults()...) {
		if only.MatchString(f.name) {
			rows = append(rows, c.run(f.name, injections, f.inject))
		}
	}
	c.load.Stop()
	c.account(rows)
}

// fault is one kind of failure the campaign injects. inject calls strike
// at the moment the fault hits (after any preparation, such as a churn
// getting under way): strike waits for a moment with a turn in every phase
// and records the phases and the time of the injection. inject returns
// the evidence that it struck, which run asks for once the turns it touched
// have ended.
type fault struct {
	name   string
	inject func(strike func()) effect
}

// effect is what shows that an injection struck: what a user of the fault
// sees (turns failed visibly, refusals waited out, a new leader), recorded
// by the injector from what it did and what followed; for a fault no user
// sees (a cut connection the dispatcher resumes) what the injector saw it
// do. It returns what it found, and whether that shows the fault struck.
type effect func() (found string, struck bool)

// atOnce is a fault that needs no preparation: it hits as soon as inject is
// called.
func atOnce(hit func() effect) func(strike func()) effect {
	return func(strike func()) effect {
		strike()
		return hit()
	}
}

// failed counts the turns of ids that failed visibly (call it once they
// have ended).
func (c *campaign) failed(ids map[string]bool) int {
	n := 0
	for id, o := range c.load.Outcomes() {
		if ids[id] && !o.OK {
			n++
		}
	}
	return n
}

// diedOfSIGKILL says whether testutil.Process.Stop's report of a process
// has it dead of a SIGKILL sent before Stop's SIGTERM: its exit status is
// "signal: killed" (a process Stop ended has exited after the SIGTERM, or
// "did not exit": Stop killed it).
func diedOfSIGKILL(stopped string) bool { return strings.HasSuffix(stopped, "signal: killed") }

// journalVolume is the size of the campaign's journal volume, room for
// every turn of a campaign many times over; journalMinFree is the
// dispatcher's --journal-min-free-bytes for it (the default suits larger
// volumes).
const journalVolume, journalMinFree = 128 << 20, 32 << 20

// faultLasts is how long a fault that lasts (an outage, a full disk) lasts:
// 1–3 s, at random.
func faultLasts() time.Duration { return time.Duration(1000+rand.IntN(2000)) * time.Millisecond }

// processFaults are the faults of the data path: its processes and their
// connection, the model, the journal's disk, the turns' clocks.
func (c *campaign) processFaults() []fault {
	return []fault{
		{"WebSocket to the app-server cut (the proxy drops every connection)", atOnce(func() effect {
			// The dispatcher reconnects and its turns go on: no user sees
			// the cut, the proxy counts it.
			cut := c.proxy.Cut()
			return func() (string, bool) { return fmt.Sprintf("%d connections cut", cut), cut > 0 }
		})},
		{"dispatcher SIGKILLed and restarted on its journal", atOnce(func() effect {
			killed := c.replica().Name
			c.load.Remove(killed)
			running := c.load.RunningOn(killed)
			_ = syscall.Kill(-c.d.Proc.Pid(), syscall.SIGKILL)
			stopped := c.d.Proc.Stop(10 * time.Second)
			c.d = c.startDispatcher()
			c.load.Add(c.replica())
			// It died of the SIGKILL, not of a drain, and the new process,
			// which cannot know how its turns went on, fails them visibly
			// (a drained dispatcher would have finished them).
			return func() (string, bool) {
				n := c.failed(running)
				return fmt.Sprintf("%s; %d of the %d turns running on it failed visibly; %s serves", stopped, n, len(running), c.replica().Name),
					diedOfSIGKILL(stopped) && n > 0
			}
		})},
		{"app-server SIGKILLed and restarted on its home", atOnce(func() effect {
			old := c.env.Fx.Codex
			running := c.load.Running()
			old.Kill()
			restarted, err := codextest.StartErr(c.t, codextest.Options{
				ProviderURL: c.env.Fx.Stub.BaseURL(), Transport: codextest.WebSocket, WSToken: dispatchertest.ServerToken,
				Dir: old.Dir, Port: portOfURL(c.t, old.URL), ExtraArgs: c.codexArgs,
			})
			must(c.t, err)
			c.env.Fx.Codex = restarted
			// The turns it ran died with it: the dispatcher fails them
			// visibly.
			return func() (string, bool) {
				n := c.failed(running)
				return fmt.Sprintf("%d of the %d turns running at the kill failed visibly", n, len(running)), n > 0
			}
		})},
		{"the model stalls, then fails (HTTP 500)", atOnce(func() effect {
			// Every model request during the outage hangs until its end,
			// then gets a 500: Codex does not retry (request_max_retries = 0).
			gate := stubmodel.NewGate()
			end := c.env.Fx.Stub.Outage(stubmodel.Stall(gate, stubmodel.HTTPError(http.StatusInternalServerError, "the model failed after stalling")))
			time.Sleep(faultLasts()) // how long the outage lasts
			held := c.load.Running() // the turns whose model requests it holds are among them
			end()
			gate.Release()
			return func() (string, bool) {
				n := c.failed(held)
				return fmt.Sprintf("%d of the %d turns running at the outage's end failed visibly", n, len(held)), n > 0
			}
		})},
		{"the journal's disk fills up, then space is freed", atOnce(func() effect {
			refusedBefore := c.load.Refusals()[storeRefusal]
			running := c.load.Running()
			filler := tmpfs.Fill(c.t, c.journalDir, "filler")
			time.Sleep(faultLasts()) // how long the disk stays full
			tmpfs.Remove(c.t, filler)
			// A full journal refuses new turns (waited out) and fails the
			// running turns whose writes it refused.
			return func() (string, bool) {
				refused, n := c.load.Refusals()[storeRefusal]-refusedBefore, c.failed(running)
				return fmt.Sprintf("%d turns refused (%s), %d of the %d turns running when it filled failed visibly", refused, storeRefusal, n, len(running)),
					refused+n > 0
			}
		})},
		{"turns' deadlines pass while they run (timeoutMs 0.2–1.2 s)", atOnce(func() effect {
			// A turn takes ~2 s (the tool call and the approval, each
			// answered after 300 ms, then ~1 s of text): the deadlines of
			// the turns posted in the next 1–3 s pass while a call or an
			// approval is pending, or while the model streams.
			before := c.load.Outcomes()
			timed := c.load.Timed()
			c.load.SetTurnTimeout(time.Duration(200+rand.IntN(1000)) * time.Millisecond)
			time.Sleep(faultLasts()) // how long new turns get the short deadline
			// ...and until a turn got it: a second may pass with no turn
			// posted, and then the fault would not have struck.
			for deadline := time.Now().Add(time.Minute); c.load.Timed() == timed && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond) // the poll's interval; the count is the proof
			}
			c.load.SetTurnTimeout(0)
			// The turns posted with it (the load records each turn's
			// timeoutMs) fail visibly: their result is a timeout.
			return func() (string, bool) {
				given, n := 0, 0
				for id, o := range c.load.Outcomes() {
					if _, ended := before[id]; !ended && o.Timeout > 0 {
						given++
						if !o.OK {
							n++
						}
					}
				}
				return fmt.Sprintf("%d of the %d turns posted with the short deadline failed visibly", n, given), n > 0
			}
		})},
	}
}

// storeRefusal is the load's key for the answers of a dispatcher whose
// journal cannot take a write (Refusals).
const storeRefusal = "503 " + string(wire.CodeStoreUnavailable)

// campaign is the campaign's state: the dispatcher process and the load.
type campaign struct {
	t          *testing.T
	env        *dispatchertest.Processes
	proxy      *testutil.CutProxy // between the dispatcher and the app-server
	codexArgs  []string           // the app-server's: a sandbox the approved commands may write from
	active     *activeTurns       // the sessions' activeTurns, as the API server shows them
	cp         *controlPlane      // the managers and their webhooks
	journalDir string
	instances  int // dispatcher processes started
	d          *dispatchertest.Replica
	load       *turnload.Load
}

// startDispatcher starts the next dispatcher process on the journal.
func (c *campaign) startDispatcher() *dispatchertest.Replica {
	c.instances++
	return c.env.StartInstance("dispatcher-0", "dispatcher-0."+strconv.Itoa(c.instances), "--journal-dir="+c.journalDir,
		"--journal-min-free-bytes="+strconv.Itoa(journalMinFree))
}

func (c *campaign) replica() turnload.Replica {
	return turnload.Replica{Name: c.d.Name + "@" + strconv.Itoa(c.d.Proc.Pid()), Base: c.d.Base, Client: c.d.HC}
}

// faultRow is one fault's line of the campaign's table.
type faultRow struct {
	fault      string
	injections int
	phases     map[turnload.Phase]int // running turns by phase at the injections
	landed     map[turnload.Phase]int // injections that found a turn in the phase
	refused    map[string]int         // answers the gateways waited out (Retry-After), by status and code
	from, to   time.Time
	recovery   []time.Duration // injection → the next turn completed
	effects    []string        // what each injection's effect found
}

// run injects fault n times, each at a random moment while turns run.
// After each it waits until a turn posted after the injection has completed
// (the recovery) and every turn running when the fault was over has ended,
// so the row's window holds every turn the fault touched.
func (c *campaign) run(name string, n int, inject func(strike func()) effect) faultRow {
	row := faultRow{fault: name, injections: n, phases: map[turnload.Phase]int{}, landed: map[turnload.Phase]int{}, from: time.Now()}
	refusedBefore := c.load.Refusals()
	for i := range n {
		wait := time.Duration(500+rand.IntN(1500)) * time.Millisecond
		time.Sleep(wait) // a random point of the turns' lives, not an ordering
		var at time.Time
		struck := inject(func() {
			for p, k := range c.untilEveryPhase(row.mustFind(n - i)) {
				row.phases[p] += k
				if k > 0 {
					row.landed[p]++
				}
			}
			at = time.Now()
		})
		if at.IsZero() {
			c.t.Fatalf("%s: the fault never struck", name)
		}
		touched := c.load.Running()
		row.recovery = append(row.recovery, c.recovered(at))
		if err := c.load.WaitEnded(touched, 3*time.Minute); err != nil {
			c.t.Fatalf("%s: the turns running when it was over did not end: %v", name, err)
		}
		// Every injection, also in a campaign too short for the phases'
		// check, must have done what the fault says.
		found, ok := struck()
		if !ok {
			c.t.Errorf("%s: injection %d of %d had no effect: %s", name, i+1, n, found)
		}
		row.effects = append(row.effects, found)
	}
	row.to = time.Now()
	if n >= campaignInjections {
		for _, p := range allPhases {
			if row.landed[p] < minPerPhase {
				c.t.Errorf("%s: %d of %d injections found a turn %s, want at least %d", name, row.landed[p], n, p, minPerPhase)
			}
		}
	}
	row.refused = c.load.Refusals()
	for k, v := range refusedBefore {
		row.refused[k] -= v
		if row.refused[k] == 0 {
			delete(row.refused, k)
		}
	}
	c.t.Logf("%s: %d injections, phases at injection %v, recovery %v, effects %q", name, n, row.phases, row.recovery, row.effects)
	return row
}

// phaseBeforeStatus is the phase between a turn's result, which its
// gateway has, and the AgentSession's status write that records its end
// (lastTurn): a fault there must not leave the session without that end.
const phaseBeforeStatus turnload.Phase = "after the result, before the status write"

// allPhases are the phases of a turn the campaign reports, in order.
var allPhases = []turnload.Phase{turnload.PhaseBeforeClaim, turnload.PhaseClaimed, turnload.PhaseStreaming,
	turnload.PhaseToolPending, turnload.PhaseApprovalPending, phaseBeforeStatus}

// mustFind are the phases an injection must find a turn in for the row to
// reach minPerPhase in each, with left injections to go (this one
// included); none in a campaign too short to be held to it.
func (row *faultRow) mustFind(left int) []turnload.Phase {
	if row.injections < campaignInjections {
		return nil
	}
	var must []turnload.Phase
	for _, p := range allPhases {
		if minPerPhase-row.landed[p] >= left {
			must = append(must, p)
		}
	}
	return must
}

// untilEveryPhase waits, up to 12 s, until every phase has a turn in it:
// before the claim and after the result (before the status write) last
// milliseconds, and a random moment alone seldom finds turns in all six.
// After the 12 s it waits on, up to a minute, for a moment with a turn in
// each phase of must: a fault that fails every running turn at once leaves
// the sessions in step for a while, so that all six seldom meet. It returns
// the running turns by phase at that moment (or at the end of the wait).
func (c *campaign) untilEveryPhase(must []turnload.Phase) map[turnload.Phase]int {
	start := time.Now()
	for {
		phases := c.load.Phases()
		phases[phaseBeforeStatus] = c.active.endedButActive(c.load.Ended)
		every, musts := true, true
		for _, p := range allPhases {
			every = every && phases[p] > 0
		}
		for _, p := range must {
			musts = musts && phases[p] > 0
		}
		waited := time.Since(start)
		if every || (musts && waited > 12*time.Second) || waited > time.Minute {
			return phases
		}
		time.Sleep(time.Millisecond) // the interval of the polls; the phases are the proof
	}
}

// recovered waits until a turn posted after at has completed, and returns
// how long after at that was. For a fault that lasts (an outage, a full
// disk) it includes the fault's 1–3 s.
func (c *campaign) recovered(at time.Time) time.Duration {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		first := time.Time{}
		for _, o := range c.load.Outcomes() {
			if o.OK && o.Posted.After(at) && (first.IsZero() || o.Ended.Before(first)) {
				first = o.Ended
			}
		}
		if !first.IsZero() {
			return first.Sub(at)
		}
		time.Sleep(100 * time.Millisecond) // the interval of the polls; the outcome is the proof
	}
	c.t.Fatalf("no turn posted after an injection at %s completed within 3 minutes", at.Format(time.RFC3339))
	return 0
}

func portOfURL(t *testing.T, url string) int {
	t.Helper()
	p, err := strconv.Atoi(url[strings.LastIndex(url, ":")+1:])
	must(t, err)
	return p
}
