// Package turnload is the gateways' side of the many-dispatchers fault
// campaign (docs/reliability.md, "Many dispatchers on PostgreSQL"):
// sessions running turn after turn against a set of dispatcher replicas,
// each client acting as a gateway does — a turn posted to a replica that is
// gone is posted to another with the same body, a stream that breaks is
// resumed with Last-Event-ID on another — and a record of where each turn was
// claimed and how it ended. The campaign on processes (test/faults) and
// on the chart's Deployment (test/e2e/system) drive their replicas through
// it and judge the outcome with Judge.
package turnload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// Replica is one dispatcher the load may send turns to.
type Replica struct {
	Name string
	// Base is the sessions' collection URL:
	// https://…/v1/namespaces/<ns>/agentsessions.
	Base   string
	Client *http.Client
}

// Outcome is how one turn ended, as its gateway saw it.
type Outcome struct {
	OK bool // a result whose terminal is ok
	// Code is the error event's code, or "result <terminal kind>: <message>"
	// for a result that is not ok.
	Code       string
	Message    string
	ReplaySafe bool
	Replica    string        // where it was claimed
	Posted     time.Time     // when its gateway first posted it
	Ended      time.Time     // when its gateway saw it end
	Timeout    time.Duration // the turn's timeoutMs (SetTurnTimeout), zero when it had none
}

// Load is the gateways: one client per session, started by Start, stopped
// by Stop.
type Load struct {
	stub  *stubmodel.Server
	token string // the gateways' bearer token
	stop  atomic.Bool
	sent  atomic.Int64
	// toolDelay > 0: every turn calls the host tool ProbeTool once, answered
	// after toolDelay (WithHostTool).
	toolDelay time.Duration
	// commandDir != "": every turn also runs a shell command that needs the
	// gateway's approval, appending its runId to commandDir/<runId>
	// (WithApprovals).
	commandDir string

	mu        sync.Mutex
	changed   *sync.Cond
	serving   []Replica
	next      int
	claimedOn map[string]string // runId → replica, while it runs
	postingTo map[string]string // runId → replica its POST went to, until the answer's headers are back
	outcomes  map[string]Outcome
	phase     map[string]Phase         // runId → where the turn is, while it runs
	toolCalls map[string]int           // callId → tool_call events received
	timeout   time.Duration            // the timeoutMs of the turns posted next (SetTurnTimeout)
	timeouts  map[string]time.Duration // runId → its timeoutMs, when it has one
	posted    map[string]time.Time     // runId → when it was first posted, while it runs
	refusals  map[string]int           // "<status> <code>" → answers waited out and posted again
	approvals map[string]int           // runId/requestId → approval_request events received
	taken     map[string]int           // runId/route → answers the dispatcher took (202, or 409: taken before)
	unheard   map[string]int           // runId/route → answers sent whose reply was lost (transport error or 5xx): maybe taken

	clients sync.WaitGroup
}

// New prepares the load: every turn's reply comes from stub, every request
// carries token.
func New(stub *stubmodel.Server, token string) *Load {
	l := &Load{stub: stub, token: token, claimedOn: map[string]string{}, postingTo: map[string]string{}, outcomes: map[string]Outcome{},
		phase: map[string]Phase{}, toolCalls: map[string]int{}, timeouts: map[string]time.Duration{}, posted: map[string]time.Time{}, refusals: map[string]int{}, approvals: map[string]int{}, taken: map[string]int{}, unheard: map[string]int{}}
	l.changed = sync.NewCond(&l.mu)
	return l
}

// SetTurnTimeout gives the turns posted from now on a timeoutMs of d (zero:
// none, the dispatcher's default), so a turn's deadline can pass while it
// runs.
func (l *Load) SetTurnTimeout(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timeout = d
}

// Marker is the text that every model request of turn runID carries, and
// nothing else's: how often the model saw it counts the turn's executions.
func Marker(runID string) string { return "load-" + runID + " " }

// Start runs one client per session until Stop.
func (l *Load) Start(ctx context.Context, sessions ...string) {
	context.AfterFunc(ctx, func() { // wakes the clients waiting for a replica
		l.mu.Lock()
		l.changed.Broadcast()
		l.mu.Unlock()
	})
	for _, s := range sessions {
		l.clients.Go(func() { l.client(ctx, s) })
	}
}

// Body is the turn request of runID: the same each time it is asked, as a
// gateway re-posts a turn.
func (l *Load) Body(runID string) string {
	l.mu.Lock()
	timeout := l.timeouts[runID]
	l.mu.Unlock()
	extra := ""
	if timeout > 0 {
		extra = fmt.Sprintf(`,"timeoutMs":%d`, timeout.Milliseconds())
	}
	if l.commandDir != "" {
		extra += `,"approvalMode":"untrusted"`
	}
	if l.toolDelay > 0 {
		extra += fmt.Sprintf(`,"tools":[{"name":%q,"description":"Probes the gateway",`+
			`"parameters":{"type":"object","properties":{"run":{"type":"string"}},"required":["run"]}}]`, ProbeTool)
	}
	return fmt.Sprintf(`{"runId":%q,"prompt":"%sgo"%s}`, runID, Marker(runID), extra)
}

// Stop lets each client finish its turn and waits for them. A client that
// waits for a replica to serve gives up.
func (l *Load) Stop() {
	l.stop.Store(true)
	l.mu.Lock()
	l.changed.Broadcast()
	l.mu.Unlock()
	l.clients.Wait()
}

// Sent is how many turns the clients posted.
func (l *Load) Sent() int64 { return l.sent.Load() }

// Add makes r a replica new turns go to.
func (l *Load) Add(r Replica) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.serving = append(l.serving, r)
	l.changed.Broadcast()
}

// Remove sends no new turn to the replica (as a load balancer that stopped
// routing to it); the streams it serves run on.
func (l *Load) Remove(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, r := range l.serving {
		if r.Name == name {
			l.serving = append(l.serving[:i], l.serving[i+1:]...)
			return
		}
	}
}

// Replicas are the replicas new turns go to.
func (l *Load) Replicas() []Replica {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Replica(nil), l.serving...)
}

// pick waits for a serving replica and returns the next in turn.
func (l *Load) pick(ctx context.Context) (Replica, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pickLocked(ctx)
}

// postTo is pick for runID's POST, recorded as on its way to the replica in
// the same step: a replica removed right after still sees it
// (RunningOnSettled) until it is answered or claimed.
func (l *Load) postTo(ctx context.Context, runID string) (Replica, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.pickLocked(ctx)
	if ok {
		l.postingTo[runID] = r.Name
	}
	return r, ok
}

func (l *Load) pickLocked(ctx context.Context) (Replica, bool) {
	for len(l.serving) == 0 {
		if ctx.Err() != nil || l.stop.Load() {
			return Replica{}, false
		}
		l.changed.Wait()
	}
	l.next++
	return l.serving[l.next%len(l.serving)], true
}

// answered ends a POST of postTo without a claim.
func (l *Load) answered(runID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.postingTo, runID)
	l.changed.Broadcast()
}

// claimed ends a POST of postTo with the turn running on replica on, in one step,
// so a turn is always either on its way to a replica or known to run there.
func (l *Load) claimed(runID, on string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.postingTo, runID)
	l.claimedOn[runID] = on
	l.changed.Broadcast()
}

func (l *Load) ended(runID string, o Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o.Replica, o.Posted, o.Ended, o.Timeout = l.claimedOn[runID], l.posted[runID], time.Now(), l.timeouts[runID]
	delete(l.claimedOn, runID)
	delete(l.posted, runID)
	delete(l.phase, runID)
	l.outcomes[runID] = o
	l.changed.Broadcast()
}

// client is one session's gateway: turn after turn until the load stops.
// Each turn streams ~1 s of reply, so a replica always has turns running.
func (l *Load) client(ctx context.Context, session string) {
	for n := 0; !l.stop.Load() && ctx.Err() == nil; n++ {
		runID := session + "-" + strconv.Itoa(n)
		var replies []stubmodel.Reply
		if l.toolDelay > 0 {
			replies = append(replies, stubmodel.CallJSON(ProbeTool, map[string]string{"run": runID}))
		}
		if l.commandDir != "" {
			replies = append(replies, stubmodel.CallJSON("exec_command", map[string]string{
				"cmd": "echo " + runID + " >> " + filepath.Join(l.commandDir, commandFile+runID)}))
		}
		replies = append(replies, stubmodel.SlowText("done "+runID, 120*time.Millisecond, "a ", "b ", "c ", "d ", "e ", "f ", "g ", "h "))
		l.stub.When(Marker(runID), replies...)
		l.mu.Lock()
		if l.timeout > 0 {
			l.timeouts[runID] = l.timeout
		}
		l.posted[runID] = time.Now()
		l.mu.Unlock()
		l.sent.Add(1)
		l.turn(ctx, session, runID, l.Body(runID))
		if !l.completed(runID) {
			backOff(ctx)
		}
	}
}

// completed says whether turn runID ended with an ok result.
func (l *Load) completed(runID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	o, ok := l.outcomes[runID]
	return ok && o.OK
}

// backOff is a gateway's pause after a failed turn: 0–1 s at random, as
// clients back off. A fault that fails every running turn at once (a
// dispatcher's or an app-server's death) would otherwise leave the sessions
// posting, and so running, in step ever after; a session posts its next
// turn at once after one that completed.
func backOff(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(rand.N(time.Second)):
	}
}

// turn runs one turn to its end, as a gateway: another replica when one is
// gone, the stream resumed where it broke.
func (l *Load) turn(ctx context.Context, session, runID, body string) {
	lastID, turnToken := "", ""
	l.setPhase(runID, PhaseBeforeClaim)
	for ctx.Err() == nil {
		r, ok := l.postTo(ctx, runID)
		if !ok {
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Base+"/"+session+"/turns", strings.NewReader(body))
		if err != nil {
			l.answered(runID)
			l.ended(runID, Outcome{Code: "request: " + err.Error()})
			return
		}
		req.Header.Set("Authorization", "Bearer "+l.token)
		req.Header.Set("Content-Type", "application/json")
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := r.Client.Do(req)
		if err != nil {
			l.answered(runID)
			retryPause(ctx) // the replica is gone: another one
			continue
		}
		if resp.StatusCode != http.StatusOK || lastID != "" {
			l.answered(runID)
		}
		if resp.StatusCode != http.StatusOK {
			var e wire.Error
			_ = json.NewDecoder(resp.Body).Decode(&e)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
				// Draining, or asked to come back: as a gateway does, after
				// Retry-After, on whichever replica is next.
				l.mu.Lock()
				l.refusals[strconv.Itoa(resp.StatusCode)+" "+string(e.Code)]++
				l.mu.Unlock()
				retryAfter(ctx, resp.Header.Get("Retry-After"))
				continue
			}
			l.ended(runID, Outcome{Code: "HTTP " + strconv.Itoa(resp.StatusCode) + " " + string(e.Code), Message: e.Message, ReplaySafe: e.ReplaySafe == nil || *e.ReplaySafe})
			return
		}
		if lastID == "" {
			l.claimed(runID, r.Name)
		}
		var end *Outcome
		_ = sse.Read(resp.Body, func(ev sse.Event) bool {
			lastID = ev.ID
			switch ev.Type {
			case wire.EventSelected:
				var sel wire.SelectedEvent
				_ = json.Unmarshal(ev.Data, &sel)
				turnToken = sel.TurnToken
				l.setPhase(runID, PhaseClaimed)
			case wire.EventPartial:
				l.setPhase(runID, PhaseStreaming)
			case wire.EventToolCall:
				var call wire.ToolCall
				_ = json.Unmarshal(ev.Data, &call)
				l.setPhase(runID, PhaseToolPending)
				l.mu.Lock()
				l.toolCalls[call.CallID]++
				l.mu.Unlock()
				answer := fmt.Sprintf(`{"callId":%q,"content":[{"type":"text","text":"probe ok"}]}`, call.CallID)
				l.clients.Go(func() { l.answer(ctx, session, runID, turnToken, "tool-results", answer) })
			case wire.EventApprovalRequest:
				var asked wire.ApprovalRequest
				_ = json.Unmarshal(ev.Data, &asked)
				l.setPhase(runID, PhaseApprovalPending)
				l.mu.Lock()
				l.approvals[runID+"/"+asked.RequestID]++
				first := l.approvals[runID+"/"+asked.RequestID] == 1
				l.mu.Unlock()
				if first {
					answer := fmt.Sprintf(`{"requestId":%q,"decision":"approve_once"}`, asked.RequestID)
					l.clients.Go(func() { l.answer(ctx, session, runID, turnToken, "approvals", answer) })
				}
			case wire.EventResult:
				var res wire.ResultEvent
				_ = json.Unmarshal(ev.Data, &res)
				end = &Outcome{OK: res.Terminal.Kind == wire.TerminalOK}
				if !end.OK {
					end.Code = "result " + string(res.Terminal.Kind) + ": " + res.Terminal.Message
				}
				return false
			case wire.EventError:
				var e wire.Error
				_ = json.Unmarshal(ev.Data, &e)
				end = &Outcome{Code: string(e.Code), Message: e.Message, ReplaySafe: e.ReplaySafe == nil || *e.ReplaySafe}
				return false
			}
			return true
		})
		_ = resp.Body.Close()
		if end != nil {
			l.ended(runID, *end)
			return
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return
		}
	}
}

// retryAfter waits as an answer's Retry-After header asks (seconds; at most
// 5 s here, at least retryPause's), plus up to a quarter more at random, as
// clients do: gateways refused together (an API server's restart refuses
// every turn) would otherwise all come back together, and stay in step.
func retryAfter(ctx context.Context, header string) {
	secs, err := strconv.Atoi(header)
	if err != nil || secs <= 0 {
		retryPause(ctx)
		return
	}
	wait := min(time.Duration(secs)*time.Second, 5*time.Second)
	select {
	case <-ctx.Done():
	case <-time.After(wait + rand.N(wait/4+1)):
	}
}

// retryPause keeps a client whose replicas are all gone from spinning.
func retryPause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(50 * time.Millisecond):
	}
}
