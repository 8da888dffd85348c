//go:build postgres

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/dispatchertest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// TestReplicasShareTurnsOnPostgres runs two dispatcher processes on one
// PostgreSQL, as two replicas of the chart's Deployment (leader election on,
// each its own POD_NAME and address): both serve, the follower too; a host
// tool call of a turn running on one is answered through the other, which
// also reads the run; and a replica killed mid-turn has exactly that turn
// ended as failed by the survivor's sweep, its AgentSession's activeTurn
// cleared, while the survivor keeps serving.
func TestReplicasShareTurnsOnPostgres(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "dispatcher-replicas"
	env := dispatchertest.NewReplicas(ctx, t, ns, "tools", "crash")
	fx := env.Fx
	a, b := env.Start("harness-dispatcher-a"), env.Start("harness-dispatcher-b")

	t.Run("a tool call of a turn on one replica is answered through the other", func(t *testing.T) {
		fx.Stub.When("rep-1", stubmodel.CallJSON("lookup_weather", map[string]any{"city": "Oslo"}))
		body := `{"runId":"run-rep1","prompt":"rep-1 weather in Oslo?","tools":[{"name":"lookup_weather","description":"Weather by city",` +
			`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]}`
		resp, err := dispatchertest.TurnRequest(ctx, a.HC, a.Base+"/tools/turns", fx.Gateway, body)
		must(t, err)
		defer func() { _ = resp.Body.Close() }()
		var token string
		var answered, result bool
		err = sse.Read(resp.Body, func(ev sse.Event) bool {
			switch ev.Type {
			case wire.EventSelected:
				var d struct {
					TurnToken string `json:"turnToken"`
				}
				must(t, json.Unmarshal(ev.Data, &d))
				token = d.TurnToken
			case wire.EventToolCall:
				var call wire.ToolCall
				must(t, json.Unmarshal(ev.Data, &call))
				answer := fmt.Sprintf(`{"callId":%q,"content":[{"type":"text","text":"sunny, 21C"}]}`, call.CallID)
				st, got := do(t, b.HC, http.MethodPost, b.Base+"/tools/turns/run-rep1/tool-results", fx.Gateway, answer,
					map[string]string{wire.TurnTokenHeader: token})
				if st != http.StatusAccepted {
					t.Errorf("the tool result posted to the other replica: %d %s", st, got)
				}
				answered = true
			case wire.EventResult:
				result = true
				return false
			}
			return true
		})
		must(t, err)
		if !answered || !result {
			t.Fatalf("answered %v, result %v", answered, result)
		}
		var outputs []string
		for _, o := range fx.Stub.FunctionCallOutputs() {
			outputs = append(outputs, o.Output)
		}
		if !strings.Contains(strings.Join(outputs, "\n"), "sunny, 21C") {
			t.Fatalf("the model never saw the tool's output: %q", outputs)
		}
		// The result streams before the run's status is written (a crash
		// between the two is a phase of the fault campaign), so the other
		// replica reads "finished" soon after the result, not at once.
		var st int
		var got string
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			st, got = do(t, b.HC, http.MethodGet, b.Base+"/tools/turns/run-rep1", fx.Gateway, "", nil)
			return st == http.StatusOK && strings.Contains(got, `"state":"finished"`), nil
		}); err != nil {
			t.Fatalf("the run read through the other replica never finished: %d %s", st, got)
		}
	})

	t.Run("a stream broken on one replica resumes on the other with Last-Event-ID, live to the result", func(t *testing.T) {
		gate := stubmodel.NewGate()
		defer gate.Release()
		fx.Stub.When("rep-resume", stubmodel.Text("first second third").HoldBefore(1, gate))
		body := `{"runId":"run-resume","prompt":"rep-resume go"}`
		// On a: read up to the first partial, then go away (the gateway's
		// connection to a breaks; the turn runs on).
		resp, err := dispatchertest.TurnRequest(ctx, a.HC, a.Base+"/tools/turns", fx.Gateway, body)
		must(t, err)
		var seen []dispatchertest.SSEEvent
		must(t, sse.Read(resp.Body, func(ev sse.Event) bool {
			id, _ := strconv.ParseInt(ev.ID, 10, 64)
			seen = append(seen, dispatchertest.SSEEvent{ID: id, Type: ev.Type, Data: ev.Data})
			return ev.Type != wire.EventPartial
		}))
		_ = resp.Body.Close()
		<-gate.Reached()
		last := seen[len(seen)-1].ID

		// On b: the same body from the last event seen; the rest arrives as
		// the turn (still held on a) goes on.
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.Base+"/tools/turns", strings.NewReader(body))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+fx.Gateway)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Last-Event-ID", strconv.FormatInt(last, 10))
		resumed, err := b.HC.Do(req)
		must(t, err)
		defer func() { _ = resumed.Body.Close() }()
		if resumed.StatusCode != http.StatusOK {
			got, _ := io.ReadAll(resumed.Body)
			t.Fatalf("resume on the other replica: %d %s", resumed.StatusCode, got)
		}
		gate.Release()
		var rest []dispatchertest.SSEEvent
		var text strings.Builder
		must(t, sse.Read(resumed.Body, func(ev sse.Event) bool {
			id, _ := strconv.ParseInt(ev.ID, 10, 64)
			rest = append(rest, dispatchertest.SSEEvent{ID: id, Type: ev.Type, Data: ev.Data})
			if ev.Type == wire.EventPartial {
				var p wire.Partial
				_ = json.Unmarshal(ev.Data, &p)
				text.WriteString(p.Delta)
			}
			return ev.Type != wire.EventResult && ev.Type != wire.EventError
		}))
		if len(rest) == 0 || rest[0].ID != last+1 || rest[len(rest)-1].Type != wire.EventResult {
			t.Fatalf("resumed after event %d: %v (first id %v)", last, typesOf(rest), rest)
		}
		for i := 1; i < len(rest); i++ {
			if rest[i].ID != rest[i-1].ID+1 {
				t.Fatalf("resumed events are not consecutive: %d after %d", rest[i].ID, rest[i-1].ID)
			}
		}
		if !strings.Contains(text.String(), "third") {
			t.Fatalf("the partials after the break say %q, want the rest of the reply", text.String())
		}
		if n := len(fx.Stub.RequestsContaining("rep-resume")); n != 1 {
			t.Fatalf("the model was asked %d times, want once", n)
		}
		t.Logf("events 1–%d on one replica, %d–%d on the other; partial text after the break: %q", last, rest[0].ID, rest[len(rest)-1].ID, text.String())
	})

	t.Run("a replica killed mid-turn has that turn ended as failed by the survivor", func(t *testing.T) {
		gate := stubmodel.NewGate()
		defer gate.Release()
		fx.Stub.When("rep-2", stubmodel.Stall(gate, stubmodel.Text("never said")))
		streamed := make(chan error, 1)
		go func() {
			resp, err := dispatchertest.TurnRequest(ctx, a.HC, a.Base+"/crash/turns", fx.Gateway, `{"runId":"run-rep2","prompt":"rep-2 think long"}`)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			streamed <- err
		}()
		_, err := fx.Stub.WaitMarker(ctx, "rep-2")
		must(t, err)
		killed := time.Now()
		_ = syscall.Kill(-a.Proc.Pid(), syscall.SIGKILL)
		<-streamed

		// The lease (30 s) expires, the survivor's next sweep (1 s) ends the
		// run, then records it on the AgentSession.
		deadline := killed.Add(90 * time.Second)
		for {
			st, got := do(t, b.HC, http.MethodGet, b.Base+"/crash/turns/run-rep2", fx.Gateway, "", nil)
			var s v1alpha1.AgentSession
			must(t, fx.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "crash"}, &s))
			failed := st == http.StatusOK && strings.Contains(got, `"state":"failed"`)
			recorded := s.Status.ActiveTurn == nil && s.Status.LastTurn != nil && s.Status.LastTurn.RunID == "run-rep2"
			if failed && recorded {
				if s.Status.LastTurn.Outcome != v1alpha1.TurnFailed {
					t.Fatalf("the killed replica's turn is recorded %s, want Failed", s.Status.LastTurn.Outcome)
				}
				t.Logf("ended and recorded %s after the kill: %s", time.Since(killed).Round(time.Second), got)
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the killed replica's turn was not ended and recorded: run %d %s; activeTurn %+v, lastTurn %+v\nsurvivor:\n%s",
					st, got, s.Status.ActiveTurn, s.Status.LastTurn, b.Proc.Tail(8<<10))
			}
			time.Sleep(500 * time.Millisecond) // the interval of the reads; what they show is the proof
		}
		fx.Stub.When("rep-3", stubmodel.Text("the survivor serves"))
		resp, err := dispatchertest.TurnRequest(ctx, b.HC, b.Base+"/crash/turns", fx.Gateway, `{"runId":"run-rep3","prompt":"rep-3 still there?"}`)
		must(t, err)
		evs := dispatchertest.ParseSSE(t, resp.Body)
		_ = resp.Body.Close()
		if evs[len(evs)-1].Type != wire.EventResult {
			t.Fatalf("the session's next turn on the survivor: %v", typesOf(evs))
		}
		if err := b.Proc.Unexpected(); err != nil {
			t.Fatalf("%v\n%s", err, b.Proc.Tail(4<<10))
		}
	})
}
