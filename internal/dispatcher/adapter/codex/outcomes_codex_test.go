package codex

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// applyPatch is an exec_command call of Codex's apply_patch: Codex
// intercepts it and runs it as a native file change (a fileChange item).
func applyPatch(body string) stubmodel.Reply {
	return stubmodel.CallJSON("exec_command", map[string]string{
		"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n" + body + "*** End Patch\nEOF\n"})
}

// A gateway learns from each native tool_terminal whether the action changed
// anything: a patch mutates and names its files, a command possibly mutates.
// lastToolError keeps the failed patch across a refused host tool and an
// unrelated successful command, and clears it when a later patch of the same
// file succeeds.
func TestNativeOutcomesCarryMutationFacts(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	in := r.input("MUTATE files")
	in.Tools = hostTools()
	hello, sub := filepath.Join(in.Cwd, "hello.txt"), filepath.Join(in.Cwd, "hello.txt", "sub.txt")
	r.stub.When("MUTATE",
		applyPatch("*** Add File: hello.txt\n+hello\n"),
		// hello.txt is a file, so adding a file below it fails after
		// Codex accepted the patch: a failed fileChange.
		applyPatch("*** Add File: hello.txt/sub.txt\n+x\n"),
		stubmodel.CallJSON("lookup_weather", map[string]string{"city": "Paris"}), // no client: refused
		stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo hi"}),
		stubmodel.Text("done"))
	rec := &recorder{}
	res := run(t, r, in, rec)

	terms := rec.terminals()
	if len(terms) != 4 {
		t.Fatalf("tool_terminal events %s", mustJSON(t, terms))
	}
	added, failed, refused, echo := terms[0], terms[1], terms[2], terms[3]
	if m := added.NativeMutation; added.Tool != "apply_patch" || added.Outcome != wire.OutcomeSuccess || m == nil ||
		m.Mutation != wire.MutationYes || !m.MutatingAction || m.ReplaySafe || !slices.Equal(m.ChangedPaths, []string{hello}) {
		t.Errorf("the added file's terminal %s", mustJSON(t, added))
	}
	if m := failed.NativeMutation; failed.Tool != "apply_patch" || failed.Outcome != wire.OutcomeFailure || m == nil ||
		!m.MutatingAction || !slices.Equal(m.ChangedPaths, []string{sub}) {
		t.Errorf("the failed patch's terminal %s", mustJSON(t, failed))
	}
	if refused.Tool != "lookup_weather" || refused.Outcome != wire.OutcomeFailure || refused.ExecutionStarted || refused.NativeMutation != nil {
		t.Errorf("the refused host tool's terminal %s (host tools carry no nativeMutation)", mustJSON(t, refused))
	}
	if m := echo.NativeMutation; echo.Tool != "exec" || echo.Outcome != wire.OutcomeSuccess || m == nil ||
		m.Mutation != wire.MutationPossibly || !m.MutatingAction || len(m.ChangedPaths) != 0 {
		t.Errorf("the command's terminal %s", mustJSON(t, echo))
	}
	if e := res.LastToolError; e == nil || e.CallID != failed.CallID || !e.MutatingAction ||
		e.ActionFingerprint != failed.NativeMutation.ActionFingerprint {
		t.Fatalf("lastToolError %s, want the failed patch %s", mustJSON(t, e), failed.CallID)
	}

	// The next turn removes the file in the way and retries the patch.
	in = r.input("RETRY the patch")
	in.ThreadID = res.ThreadID
	r.stub.When("RETRY",
		stubmodel.CallJSON("exec_command", map[string]string{"cmd": "rm hello.txt"}),
		applyPatch("*** Add File: hello.txt/sub.txt\n+x\n"),
		stubmodel.Text("fixed"))
	rec = &recorder{}
	res = run(t, r, in, rec)
	terms = rec.terminals()
	if len(terms) != 2 || terms[1].Outcome != wire.OutcomeSuccess || terms[1].NativeMutation == nil ||
		terms[1].NativeMutation.ActionFingerprint != failed.NativeMutation.ActionFingerprint {
		t.Fatalf("retry terminals %s", mustJSON(t, terms))
	}
	if res.LastToolError != nil {
		t.Fatalf("after the same patch succeeded: lastToolError %s", mustJSON(t, res.LastToolError))
	}
	if !exists(sub) {
		t.Fatalf("%s was not created", sub)
	}
}

// When Codex compacts the thread's context during a turn (here: its
// auto-compaction limit is below one response's usage), the stream carries a
// compaction agent_event, start then end, before the turn ends.
func TestCompactionIsReportedAsAnAgentEvent(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{ExtraArgs: []string{"-c", "model_auto_compact_token_limit=5"}})
	r.stub.When("COMPACT", stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo hi"}))
	rec := &recorder{}
	res := run(t, r, r.input("COMPACT me"), rec)
	if res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("terminal %+v", res.Terminal)
	}
	if len(r.stub.RequestsContaining("CONTEXT CHECKPOINT COMPACTION")) == 0 {
		t.Fatal("Codex did not compact: no summary request reached the model")
	}
	c := rec.agent(wire.StreamCompaction)
	if len(c) != 2 || c[0].Phase != wire.PhaseStart || c[1].Phase != wire.PhaseEnd || c[0].ItemID == "" || c[1].ItemID != c[0].ItemID {
		t.Fatalf("compaction events %+v", c)
	}
	order := strings.Join(rec.types(), " ")
	if i, j := strings.Index(order, "agent_event:compaction/end"), strings.Index(order, "agent_event:lifecycle/end"); i < 0 || j < i {
		t.Fatalf("event order %s", order)
	}
}

// A patch Codex rejects before applying it (here: it updates a file that
// does not exist) produces no item at all with Codex 0.169.0: the model is
// told the error as the exec_command output, but no tool_terminal can be
// reported and lastToolError stays unset. Pins the gap documented in
// docs/codex-app-server.md.
func TestRejectedPatchProducesNoNativeItem(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("REJECT", applyPatch("*** Update File: missing.txt\n@@\n-a\n+b\n"), stubmodel.Text("ok"))
	rec := &recorder{}
	res := run(t, r, r.input("REJECT this"), rec)
	if terms := rec.terminals(); len(terms) != 0 || res.LastToolError != nil {
		t.Fatalf("terminals %+v, lastToolError %+v", terms, res.LastToolError)
	}
	outs := r.stub.FunctionCallOutputs()
	if len(outs) != 1 || !strings.Contains(outs[0].Output, "missing.txt") {
		t.Fatalf("the model was told %+v", outs)
	}
	t.Logf("the model was told: %q", outs[0].Output)
}
