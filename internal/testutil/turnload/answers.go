package turnload

import (
	"context"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The gateway's side of a turn's host tool call and approval request: what
// the load asks of the model, how it answers, and what it counts.

// WithHostTool makes every turn call the host tool ProbeTool once before
// its text; the client answers each call after delay (> 0), so a fault can
// land while the call is pending.
func (l *Load) WithHostTool(delay time.Duration) *Load {
	l.toolDelay = delay
	return l
}

// WithApprovals makes every turn run a shell command through Codex that
// needs the gateway's approval (approvalMode untrusted), after its host
// tool call when there is one; the client approves it once after the
// WithHostTool delay, so a fault can land while it is pending. The command
// appends the runId to a file of its own in dir, which the app-server's
// sandbox must let it write (a writable root): CommandRuns counts how often
// each ran.
func (l *Load) WithApprovals(dir string) *Load {
	l.commandDir = dir
	return l
}

// commandFile begins the name of the file each turn's command appends to.
const commandFile = "turnload-command-"

// Approved reports whether the dispatcher took the gateway's approval of a
// command of turn runID (a refused answer, e.g. 403, leaves the command
// unapproved, and Codex declines it when the request times out).
func (l *Load) Approved(runID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.taken[runID+"/approvals"] > 0
}

// MaybeApproved reports whether the gateway sent an approval of a command
// of turn runID that the dispatcher may have taken: one it took, or one
// whose reply was lost — a replica killed after it handed the approval to
// Codex and before it answered. A command that ran without either ran
// without the gateway's approval.
func (l *Load) MaybeApproved(runID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.taken[runID+"/approvals"] > 0 || l.unheard[runID+"/approvals"] > 0
}

// CommandRuns is how often each turn's approved command ran, by runId.
func (l *Load) CommandRuns() (map[string]int, error) {
	out := map[string]int{}
	err := filepath.WalkDir(l.commandDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		runID, ok := strings.CutPrefix(d.Name(), commandFile)
		if !ok {
			return nil
		}
		raw, err := os.ReadFile(path)
		out[runID] += strings.Count(string(raw), "\n")
		return err
	})
	return out, err
}

// ProbeTool is the host tool of WithHostTool.
const ProbeTool = "fault_probe"

// ToolCalls is how often each host tool call id reached a gateway's handler.
func (l *Load) ToolCalls() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.toolCalls)
}

// answer is the gateway's handler of one host tool call or approval
// request: after the WithHostTool delay it posts body to the run's route
// (tool-results, approvals) on any replica until one takes it or the turn
// has ended.
func (l *Load) answer(ctx context.Context, session, runID, turnToken, route, body string) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(l.toolDelay):
	}
	for ctx.Err() == nil {
		l.mu.Lock()
		_, ended := l.outcomes[runID]
		l.mu.Unlock()
		if ended {
			return
		}
		r, ok := l.pick(ctx)
		if !ok {
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.Base+"/"+session+"/turns/"+runID+"/"+route, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", "Bearer "+l.token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(wire.TurnTokenHeader, turnToken)
		resp, err := r.Client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusConflict {
				// 409: already answered — by this gateway, through a replica
				// that took it and died before it said so.
				l.mu.Lock()
				l.taken[runID+"/"+route]++
				l.mu.Unlock()
				l.setPhase(runID, PhaseStreaming)
				return
			}
			if resp.StatusCode < 500 {
				return // refused for good (the turn ended): its stream says how
			}
		}
		// No answer, or a 5xx: the replica may have taken it before it
		// failed. The retry says which, unless the turn ends first.
		l.mu.Lock()
		l.unheard[runID+"/"+route]++
		l.mu.Unlock()
		retryPause(ctx)
	}
}
