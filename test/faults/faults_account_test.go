//go:build faults

package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/dispatchertest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
	"github.com/openclaw/harness-operator/internal/testutil/turnload"
)

// account checks every turn and prints the campaign's table.
func (c *campaign) account(rows []faultRow) {
	t, fx := c.t, c.env.Fx
	outcomes := c.load.Outcomes()
	ids := make([]string, 0, len(outcomes))
	for id := range outcomes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	twice, executions := 0, turnload.Executions(fx.Stub)
	for _, id := range ids {
		if n := executions(id); n > 1 || (outcomes[id].OK && n != 1) {
			twice += max(n-1, 0)
			t.Errorf("turn %s (%+v) reached the model %d times", id, outcomes[id], n)
			for _, r := range fx.Stub.RequestsContaining(turnload.Marker(id)) {
				var items []string
				for _, it := range r.Input {
					txt := it.Text()
					if len(txt) > 60 {
						txt = txt[:60]
					}
					items = append(items, it.Type+"/"+it.Role+":"+txt)
				}
				t.Logf("  request %d: %q", r.Seq, items)
			}
		}
	}
	toolTwice := 0
	for call, n := range c.load.ToolCalls() {
		if n > 1 {
			toolTwice++
			t.Errorf("tool call %s was delivered %d times", call, n)
		}
	}
	commandTwice := c.commandsRunOnce(outcomes)
	lost := c.load.Sent() - int64(len(outcomes))
	if lost != 0 {
		t.Errorf("%d turns were sent and never ended", lost)
	}
	missing := c.missingFromTranscripts(outcomes)
	stuck := c.stuckSessions()

	t.Logf("| fault | injections | injections that found a turn in each phase (turns) | turns ended | completed | failed visibly | waited out (Retry-After) | recovery p50/max | took |")
	t.Logf("|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		ended, completed, failed := 0, 0, map[string]int{}
		for _, o := range outcomes {
			if o.Ended.After(r.from) && !o.Ended.After(r.to) {
				ended++
				if o.OK {
					completed++
				} else {
					failed[o.Code+" replaySafe="+strconv.FormatBool(o.ReplaySafe)]++
				}
			}
		}
		t.Logf("| %s | %d | %s | %d | %d | %v | %v | %s | %s |", r.fault, r.injections, phaseList(r.landed, r.phases), ended, completed, failed, r.refused, recoveryFigure(r.recovery),
			r.to.Sub(r.from).Round(100*time.Millisecond))
	}
	for _, r := range rows {
		messages := map[string]int{}
		for _, o := range outcomes {
			if !o.OK && o.Ended.After(r.from) && !o.Ended.After(r.to) {
				messages[digitsOut.ReplaceAllString(o.Message, "N")]++
			}
		}
		for m, n := range messages {
			t.Logf("%s: %d× %.220s", r.fault, n, m)
		}
	}
	t.Logf("all faults: %d turns sent, %d ended, %d lost, %d executed twice, %d tool calls delivered twice, %d approved commands run twice, %d completed turns missing from transcripts, %d sessions stuck",
		c.load.Sent(), len(outcomes), lost, twice, toolTwice, commandTwice, missing, stuck)
}

// commandsRunOnce checks each turn's command against its approval and
// outcome: run once by a completed turn whose approval the dispatcher took,
// never run without an approval the gateway sent, never twice, and never by a turn refused
// as safe to replay (nothing ran). It returns the commands run twice.
func (c *campaign) commandsRunOnce(outcomes map[string]turnload.Outcome) int {
	runs, err := c.load.CommandRuns()
	must(c.t, err)
	twice := 0
	for id, n := range runs {
		if n > 1 {
			twice++
			c.t.Errorf("the approved command of turn %s ran %d times", id, n)
		}
	}
	for id, o := range outcomes {
		n, approved := runs[id], c.load.Approved(id)
		switch {
		case n > 0 && !c.load.MaybeApproved(id):
			c.t.Errorf("turn %s (%+v) ran its command without the gateway's approval", id, o)
		case o.OK && approved && n != 1:
			c.t.Errorf("completed turn %s (%+v) ran its approved command %d times, want once", id, o, n)
			c.dumpRun(id[:strings.LastIndex(id, "-")], id)
		case !o.OK && o.ReplaySafe && n > 0:
			c.t.Errorf("turn %s failed as safe to replay (%s: %s) but its approved command ran", id, o.Code, o.Message)
		}
	}
	return twice
}

// missingFromTranscripts counts the completed turns whose prompt or answer
// is not in their session's transcript.
func (c *campaign) missingFromTranscripts(outcomes map[string]turnload.Outcome) int {
	t := c.t
	transcripts := map[string][]wire.TranscriptRecord{}
	missing := 0
	for id, o := range outcomes {
		if !o.OK {
			continue
		}
		session := id[:strings.LastIndex(id, "-")]
		records, ok := transcripts[session]
		if !ok {
			records = c.transcript(session)
			transcripts[session] = records
		}
		if !answeredInTranscript(records, turnload.Marker(id)) {
			missing++
			t.Errorf("completed turn %s: its prompt with an answer after it is not in the transcript of %s", id, session)
			for _, r := range records {
				t.Logf("  transcript %s/%s %.80q", r.Type, r.Role, r.Text)
			}
			c.dumpRun(session, id)
			c.dumpLogs(id)
		}
	}
	return missing
}

// dumpRun logs a run's events from the journal, for a violation.
func (c *campaign) dumpRun(session, runID string) {
	req, err := http.NewRequest(http.MethodPost, c.d.Base+"/"+session+"/turns", strings.NewReader(c.load.Body(runID)))
	must(c.t, err)
	req.Header.Set("Authorization", "Bearer "+c.env.Fx.Gateway)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Last-Event-ID", "0")
	resp, err := c.d.HC.Do(req)
	if err != nil {
		c.t.Logf("  replay %s: %v", runID, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		c.t.Logf("  replay %s: %d", runID, resp.StatusCode)
		return
	}
	_ = sse.Read(resp.Body, func(ev sse.Event) bool {
		d := string(ev.Data)
		if len(d) > 300 {
			d = d[:300]
		}
		c.t.Logf("  %s %s %s", ev.ID, ev.Type, d)
		return true
	})
}

// dumpLogs logs the dispatchers' log lines that name runID.
func (c *campaign) dumpLogs(runID string) {
	logs, _ := filepath.Glob(filepath.Join(c.env.Work, "dispatcher-0.*.log"))
	for _, path := range logs {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.Contains(line, `"`+runID+`"`) {
				c.t.Logf("  %s: %.400s", filepath.Base(path), line)
			}
		}
	}
}

// answeredInTranscript reports whether the records hold the user message
// carrying marker, followed by an assistant message before the next user
// message.
func answeredInTranscript(records []wire.TranscriptRecord, marker string) bool {
	for i, r := range records {
		if r.Type != "message" || r.Role != "user" || !strings.Contains(r.Text, marker) {
			continue
		}
		for _, next := range records[i+1:] {
			if next.Type == "message" && next.Role == "user" {
				return false
			}
			if next.Type == "message" && next.Role == "assistant" {
				return true
			}
		}
	}
	return false
}

func (c *campaign) transcript(session string) []wire.TranscriptRecord {
	t := c.t
	req, err := http.NewRequest(http.MethodGet, c.d.Base+"/"+session+"/transcript", nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+c.env.Fx.Gateway)
	resp, err := c.d.HC.Do(req)
	must(t, err)
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("transcript of %s: %d", session, resp.StatusCode)
	}
	var out []wire.TranscriptRecord
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var r wire.TranscriptRecord
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	must(t, sc.Err())
	return out
}

// stuckSessions counts the sessions that keep an activeTurn a minute after
// the load stopped, or cannot run a turn without a reset.
func (c *campaign) stuckSessions() int {
	t, fx := c.t, c.env.Fx
	stuck := 0
	deadline := time.Now().Add(time.Minute)
	var list v1alpha1.AgentSessionList
	for {
		must(t, fx.K8s.List(context.Background(), &list, client.InNamespace(fx.NS)))
		active := 0
		for _, s := range list.Items {
			if s.Status.ActiveTurn != nil {
				active++
			}
		}
		if active == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond) // the interval of the reads; what they show is the proof
	}
	for _, s := range list.Items {
		if s.Status.ActiveTurn != nil {
			stuck++
			t.Errorf("session %s keeps activeTurn %s", s.Name, s.Status.ActiveTurn.RunID)
			continue
		}
		if err := c.turnAfter(s.Name); err != nil {
			stuck++
			t.Errorf("session %s cannot run a turn after the campaign: %v", s.Name, err)
		}
	}
	return stuck
}

// turnAfter runs one turn on the session as a gateway would: an error
// that says a retry is safe is retried (twice at most).
func (c *campaign) turnAfter(session string) error {
	fx := c.env.Fx
	var last error
	for attempt := range 3 {
		runID := session + "-after-" + strconv.Itoa(attempt)
		marker := turnload.Marker(runID)
		fx.Stub.When(marker, stubmodel.Text("after the campaign"))
		resp, err := dispatchertest.TurnRequest(context.Background(), c.d.HC, c.d.Base+"/"+session+"/turns", fx.Gateway,
			fmt.Sprintf(`{"runId":%q,"prompt":"%sagain"}`, runID, marker))
		if err != nil {
			return err
		}
		evs := dispatchertest.ParseSSE(c.t, resp.Body)
		_ = resp.Body.Close()
		end := evs[len(evs)-1]
		if end.Type == wire.EventResult {
			return nil
		}
		var e wire.Error
		_ = json.Unmarshal(end.Data, &e)
		last = fmt.Errorf("%s %s", end.Type, end.Data)
		if e.ReplaySafe != nil && !*e.ReplaySafe {
			return last
		}
	}
	return last
}

// digitsOut folds the numbers and ids of error messages, to count them by kind.
var digitsOut = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{27}|[0-9]+`)

func phaseList(landed, turns map[turnload.Phase]int) string {
	var parts []string
	for _, p := range allPhases {
		parts = append(parts, fmt.Sprintf("%s %d (%d)", p, landed[p], turns[p]))
	}
	return strings.Join(parts, ", ")
}

func recoveryFigure(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2].Round(10*time.Millisecond).String() + " / " + s[len(s)-1].Round(10*time.Millisecond).String()
}
