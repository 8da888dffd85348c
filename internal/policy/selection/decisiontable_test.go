package selection

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// The decision table for both engines: TestDecisionTable exports every
// TestSelect case, with what Select decides for it, to a JSON file the
// OpenClaw plugin's tests read (clients/openclaw/test/decision-table.test.ts):
// the plugin's predict() must agree with every record it can be asked about.
// A case that uses something supports() is never asked about is marked
// deferred with the reason: the dispatcher decides it at runAttempt.

var update = flag.Bool("update", false, "rewrite the decision table the OpenClaw plugin's tests read")

// decisionTablePath is the committed table, relative to this package.
const decisionTablePath = "../../../clients/openclaw/test/fixtures/decisions.json"

// regenerate is the command that rewrites it (the Makefile runs this test with -update).
const regenerate = "make generate-wire"

type decisionTable struct {
	Source     string           `json:"source"`
	Regenerate string           `json:"regenerate"`
	Records    []decisionRecord `json:"records"`
}

type decisionRecord struct {
	Name string `json:"name"`
	// Deferred is why supports() cannot predict the case; empty when it can.
	Deferred string `json:"deferred,omitempty"`
	// Harnesses and Policies are the snapshot as the API server lists it.
	Harnesses []*v1alpha1.AgentHarness  `json:"harnesses"`
	Policies  []*v1alpha1.RuntimePolicy `json:"policies"`
	Session   *sessionFacts             `json:"session,omitempty"`
	Attempt   attemptFacts              `json:"attempt"`
	// SessionObject and AttemptObject are the whole AgentSession and attempt,
	// for kubectl harness explain --offline (cmd/kubectl-harness
	// TestExplainDecisionTable), which is asked everything.
	SessionObject *v1alpha1.AgentSession `json:"sessionObject,omitempty"`
	AttemptObject *wire.Attempt          `json:"attemptObject"`
	// AssumeReadyWithoutStatus is the snapshot's flag (offline explain).
	AssumeReadyWithoutStatus bool            `json:"assumeReadyWithoutStatus,omitempty"`
	Want                     decisionOutcome `json:"want"`
}

// sessionFacts is what the AgentSession adds to the attempt.
type sessionFacts struct {
	Model           string `json:"model"`
	RuntimeOverride string `json:"runtimeOverride,omitempty"`
	// AgentHarnessID is the pin (status.agentHarnessId).
	AgentHarnessID string `json:"agentHarnessId,omitempty"`
	Locked         bool   `json:"locked,omitempty"`
}

// attemptFacts is what supports() can be asked (provider, modelId, one
// route, and a what-if override predict models), and the names of the
// attempt's other wire fields (Unaskable).
type attemptFacts struct {
	AgentID                     string              `json:"agentId,omitempty"`
	Provider                    string              `json:"provider"`
	ModelID                     string              `json:"modelId,omitempty"`
	AgentHarnessRuntimeOverride string              `json:"agentHarnessRuntimeOverride,omitempty"`
	ModelProvider               *wire.ModelProvider `json:"modelProvider,omitempty"`
	Unaskable                   []string            `json:"unaskable,omitempty"`
}

// decisionOutcome is what Select decided: a runtime and reason, or an error code.
type decisionOutcome struct {
	Runtime string         `json:"runtime,omitempty"`
	Reason  wire.Reason    `json:"reason,omitempty"`
	Code    wire.ErrorCode `json:"code,omitempty"`
}

// askable are the attempt's wire fields supports() is asked about, or that
// matter only with what a deferral names (agentId: an agent's own entry).
var askable = []string{"agentId", "provider", "modelId", "agentHarnessRuntimeOverride", "modelProvider"}

// deferral is one category of what supports() is never asked about or cannot
// know. The first that applies marks the record.
type deferral struct {
	reason  string
	applies func(tc *selectCase, a *wire.Attempt) bool
}

var deferrals = []deferral{
	{"supports() does not know the session (its model, override, pin or lock)",
		func(tc *selectCase, _ *wire.Attempt) bool { return tc.sess != nil }},
	{"a what-if agentHarnessId: supports() is never asked about a pin",
		func(_ *selectCase, a *wire.Attempt) bool { return strings.TrimSpace(a.AgentHarnessID) != "" }},
	{"a retry set (several routes): supports() is asked about ctx.modelProvider only",
		func(_ *selectCase, a *wire.Attempt) bool { return severalRoutes(a) }},
	{"an empty provider: supports() is asked with one, and predict leaves an unknown one to the dispatcher",
		func(_ *selectCase, a *wire.Attempt) bool { return NormalizeProvider(a.Provider) == "" }},
	// The agent matters only through an agent's own entry (every case
	// without a session is for the default agent, main).
	{"an agent's own policy entry: supports() does not know the agent",
		func(tc *selectCase, _ *wire.Attempt) bool {
			return slices.ContainsFunc(tc.ps, func(p *v1alpha1.RuntimePolicy) bool { return p != nil && len(p.Spec.Agents) > 0 })
		}},
	{"a tool policy: the turn's, checked by the dispatcher at runAttempt",
		func(_ *selectCase, a *wire.Attempt) bool {
			return a.ToolPolicy != nil || a.ToolsAllow != nil || a.DisableTools || a.PluginHarnessToolPolicyRestricted
		}},
	{"a version floor: the harness's condition, checked by the dispatcher at runAttempt",
		func(tc *selectCase, _ *wire.Attempt) bool { return anyHarnessIn(tc, belowFloor) }},
	{"harness readiness (conditions): checked by the dispatcher at runAttempt",
		func(tc *selectCase, _ *wire.Attempt) bool { return anyHarnessIn(tc, unavailable) }},
}

// deferralOf is the reason of the first deferral that applies, or empty.
func deferralOf(tc *selectCase, a *wire.Attempt) string {
	for _, df := range deferrals {
		if df.applies(tc, a) {
			return df.reason
		}
	}
	return ""
}

// severalRoutes reports whether the retry set adds a route besides modelProvider.
func severalRoutes(a *wire.Attempt) bool {
	for i := range a.ModelProviders {
		if a.ModelProvider == nil || !sameRoute(a.ModelProvider, &a.ModelProviders[i]) {
			return true
		}
	}
	return false
}

func anyHarnessIn(tc *selectCase, state readiness) bool {
	return slices.ContainsFunc(tc.hs, func(h *v1alpha1.AgentHarness) bool {
		if h == nil {
			return false
		}
		s, _, _ := readinessOf(h, tc.assumeReady)
		return s == state
	})
}

func decisionRecordOf(t *testing.T, tc selectCase) decisionRecord {
	t.Helper()
	a := tc.a
	if a == nil {
		a = &wire.Attempt{}
	}
	d := Select(Snapshot{Harnesses: tc.hs, Policies: tc.ps, Session: tc.sess, AssumeReadyWithoutStatus: tc.assumeReady}, tc.a)

	r := decisionRecord{
		Name:      tc.name,
		Harnesses: []*v1alpha1.AgentHarness{},
		Policies:  []*v1alpha1.RuntimePolicy{},
		Attempt: attemptFacts{
			AgentID: a.AgentID, Provider: a.Provider, ModelID: a.ModelID,
			AgentHarnessRuntimeOverride: a.AgentHarnessRuntimeOverride, ModelProvider: a.ModelProvider,
			Unaskable: unaskable(t, a),
		},
		AssumeReadyWithoutStatus: tc.assumeReady,
		AttemptObject:            a,
	}
	for _, h := range tc.hs {
		if h != nil {
			h = h.DeepCopy()
			h.APIVersion, h.Kind = v1alpha1.GroupVersion.String(), "AgentHarness"
			r.Harnesses = append(r.Harnesses, h)
		}
	}
	for _, p := range tc.ps {
		if p != nil {
			p = p.DeepCopy()
			p.APIVersion, p.Kind = v1alpha1.GroupVersion.String(), "RuntimePolicy"
			r.Policies = append(r.Policies, p)
		}
	}
	if s := tc.sess; s != nil {
		r.SessionObject = s.DeepCopy()
		r.SessionObject.APIVersion, r.SessionObject.Kind = v1alpha1.GroupVersion.String(), "AgentSession"
		r.Session = &sessionFacts{
			Model: s.Spec.Model, RuntimeOverride: string(s.Spec.RuntimeOverride),
			AgentHarnessID: s.Status.AgentHarnessID, Locked: s.Spec.ModelSelectionLocked == v1alpha1.ModelSelectionLocked,
		}
	}
	r.Deferred = deferralOf(&tc, a)
	if d.Error != nil {
		r.Want.Code = d.Error.Code
	} else {
		r.Want.Runtime, r.Want.Reason = d.Runtime, d.Reason
	}
	return r
}

// unaskable lists the attempt's wire fields, set, that supports() is never asked about.
func unaskable(t *testing.T, a *wire.Attempt) []string {
	t.Helper()
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("marshal attempt: %v", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatalf("unmarshal attempt: %v", err)
	}
	var out []string
	for k := range fields {
		if !slices.Contains(askable, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func TestDecisionTable(t *testing.T) {
	table := decisionTable{
		Source:     "internal/policy/selection TestSelect (selectCases), decided by Select",
		Regenerate: regenerate,
	}
	for _, tc := range selectCases() {
		table.Records = append(table.Records, decisionRecordOf(t, tc))
	}
	data, err := encodeTable(table)
	if err != nil {
		t.Fatalf("encode the decision table: %v", err)
	}
	path := filepath.FromSlash(decisionTablePath)
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
		return
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the decision table: %v; run %s", err, regenerate)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("clients/openclaw/test/fixtures/decisions.json differs from what TestSelect's cases decide: run %s", regenerate)
	}
}

// encodeTable writes the table as decisionTable marshals it, with one
// record a line in case order: a changed case is a changed line.
func encodeTable(table decisionTable) ([]byte, error) {
	source, err := marshalCompact(table.Source)
	if err != nil {
		return nil, err
	}
	regen, err := marshalCompact(table.Regenerate)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "{\"source\": %s,\n \"regenerate\": %s,\n \"records\": [\n", source, regen)
	for i, r := range table.Records {
		line, err := marshalCompact(r)
		if err != nil {
			return nil, err
		}
		buf.WriteString("  ")
		buf.Write(line)
		if i < len(table.Records)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString(" ]\n}\n")
	return buf.Bytes(), nil
}

// marshalCompact is json.Marshal without HTML escaping (names carry < and >).
func marshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// TestDecisionTableDeferrals keeps the deferral rules honest: each category
// marks at least one case, so a reason no case needs is removed.
func TestDecisionTableDeferrals(t *testing.T) {
	used := map[string]int{}
	for _, tc := range selectCases() {
		a := tc.a
		if a == nil {
			a = &wire.Attempt{}
		}
		used[deferralOf(&tc, a)]++
	}
	for _, df := range deferrals {
		if used[df.reason] == 0 {
			t.Errorf("no case is deferred for %q", df.reason)
		}
	}
}
