package engine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/url"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

type candidateRecord struct {
	HarnessID string `json:"harnessId"`
	Supported bool   `json:"supported"`
	Priority  int32  `json:"priority"`
	Reason    string `json:"reason,omitempty"`
}

// logDecision writes the one structured `agent harness selected` record of a
// decision (docs/design/contract-rules.md, rule 10), with the route facts it
// was made on: a refusal such as HarnessUnsupported is explained by the exact
// facts the gateway sent.
func (e *Engine) logDecision(sess *v1alpha1.AgentSession, a *wire.Attempt, d wire.Decision) {
	cands := make([]candidateRecord, 0, len(d.Candidates))
	for _, c := range d.Candidates {
		cands = append(cands, candidateRecord{HarnessID: c.HarnessID, Supported: c.Supported, Priority: c.Priority, Reason: c.Reason})
	}
	kv := []any{
		"session", sess.Namespace + "/" + sess.Name, "uid", sess.UID, "runId", a.RunID,
		"runtime", d.Runtime, "requestedRuntime", d.RequestedRuntime, "harnessId", d.HarnessID,
		"reason", d.Reason, "runtimeSource", d.RuntimeSource, "candidates", cands,
	}
	if a.ModelProvider != nil {
		kv = append(kv, "modelProvider", loggedRoute(*a.ModelProvider))
	}
	if len(a.ModelProviders) > 0 {
		routes := make([]wire.ModelProvider, len(a.ModelProviders))
		for i, r := range a.ModelProviders {
			routes[i] = loggedRoute(r)
		}
		kv = append(kv, "modelProviders", routes)
	}
	if d.Error != nil {
		kv = append(kv, "errorCode", d.Error.Code, "error", d.Error.Message)
	}
	e.log.Info("agent harness selected", kv...)
}

// loggedRoute is a route's facts as the decision record shows them. The
// seed calls them secret-free, but an authored base URL may still carry a
// credential in its user info or query (a `?key=`): those are masked, and a
// base URL that does not parse is not shown at all.
func loggedRoute(r wire.ModelProvider) wire.ModelProvider {
	if r.BaseURL == "" {
		return r
	}
	u, err := url.Parse(r.BaseURL)
	if err != nil {
		r.BaseURL = "(unparseable, not shown)"
		return r
	}
	if u.User != nil {
		u.User = url.User("redacted")
	}
	if u.RawQuery != "" {
		u.RawQuery = "redacted"
	}
	u.Fragment, u.RawFragment = "", ""
	r.BaseURL = u.String()
	return r
}

func lastSelection(d wire.Decision, runID string) *v1alpha1.LastSelection {
	ls := &v1alpha1.LastSelection{
		Runtime: v1alpha1.RuntimeID(d.Runtime), Reason: string(d.Reason), RuntimeSource: d.RuntimeSource, RunID: runID,
	}
	seen := map[string]bool{}
	for _, c := range d.Candidates {
		if seen[c.HarnessID] || len(ls.Candidates) == 64 {
			continue // listMapKey harnessId: an admission race may show one id twice
		}
		seen[c.HarnessID] = true
		res := v1alpha1.SupportResultUnsupported
		if c.Supported {
			res = v1alpha1.SupportResultSupported
		}
		ls.Candidates = append(ls.Candidates, v1alpha1.SelectionCandidate{
			HarnessID: c.HarnessID, Result: res, Priority: c.Priority, Reason: truncate(c.Reason, 256),
		})
	}
	return ls
}

func outcomeOf(k wire.TerminalKind) v1alpha1.TurnOutcome {
	switch k {
	case wire.TerminalOK:
		return v1alpha1.TurnSucceeded
	case wire.TerminalAborted:
		return v1alpha1.TurnInterrupted
	case wire.TerminalTimeout:
		return v1alpha1.TurnTimedOut
	}
	return v1alpha1.TurnFailed
}

func addUsage(c *v1alpha1.SessionCounters, u wire.Usage) {
	c.InputTokens += u.Input
	c.CachedInputTokens += u.CachedInput
	c.OutputTokens += u.Output
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// NewRunID is the runId of a request that has none: "run-" and 32 random
// hex digits.
func NewRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "run-" + hex.EncodeToString(b[:])
}

// mustJSON marshals engine-built values, which always marshal.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshalError": err.Error()})
	}
	return b
}
