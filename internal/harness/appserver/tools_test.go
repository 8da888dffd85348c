package appserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// nativeTools is what Codex 0.169.0 offers a model it does not know, with
// the offline config of internal/testutil/codextest.
var nativeTools = []string{"exec_command", "write_stdin", "request_user_input", "view_image", "web_search"}

func without(list []string, drop ...string) []string {
	return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return slices.Contains(drop, s) })
}

// Per-thread config keys isolate the native tool surface, proven by the
// tools the model is offered; other threads of the same process keep theirs.
func TestNativeToolIsolationPerThread(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	dyn := []string{"lookup_weather", "kb.search"}

	cases := []struct {
		name   string
		config map[string]any
		want   []string // native tools left
	}{
		{"baseline", nil, nativeTools},
		{"shell_tool", map[string]any{"features.shell_tool": false}, without(nativeTools, "exec_command", "write_stdin")},
		{"view_image", map[string]any{"features.view_image": false}, without(nativeTools, "view_image")},
		{"web_search", map[string]any{"web_search": "disabled"}, without(nativeTools, "web_search")},
		{"request_user_input", map[string]any{"tools.experimental_request_user_input": map[string]any{"enabled": false}}, without(nativeTools, "request_user_input")},
		{"all four", appserver.NativeToolsOffConfig(), nil},
		{"baseline again", nil, nativeTools},
	}
	for i, tc := range cases {
		th := startThread(t, c, r.srv, appserver.ThreadStartParams{DynamicTools: dynamicTools(), Config: tc.config, Ephemeral: true}, nil)
		marker := "ISO" + string(rune('A'+i))
		runTurn(t, th, marker+" hello")
		req := r.stub.RequestsContaining(marker)[0]
		got := req.ToolNames()
		var native, dynamic []string
		for _, name := range got {
			if slices.Contains(dyn, name) {
				dynamic = append(dynamic, name)
			} else {
				native = append(native, name)
			}
		}
		slices.Sort(native)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(native, want) || !slices.Equal(dynamic, dyn) {
			t.Errorf("%s: tools offered %v; want native %v plus %v", tc.name, got, tc.want, dyn)
		}
	}
}

// On an isolated thread a call to a native tool the model was not offered is
// not executed, even with danger-full-access; on a normal thread of the same
// process it is.
func TestIsolatedThreadRefusesNativeToolCalls(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	isolatedFile := filepath.Join(r.srv.Workdir, "isolated.txt")
	plainFile := filepath.Join(r.srv.Workdir, "plain.txt")
	r.stub.When("FORCE1", stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo x > " + isolatedFile}))
	r.stub.When("FORCE2", stubmodel.CallJSON("exec_command", map[string]string{"cmd": "echo x > " + plainFile}))

	iso := startThread(t, c, r.srv, appserver.ThreadStartParams{DynamicTools: dynamicTools(), Config: appserver.NativeToolsOffConfig(),
		Sandbox: appserver.SandboxDangerFullAccess, Ephemeral: true}, nil)
	res := runTurn(t, iso, "FORCE1 exec")
	if res.Status != appserver.TurnCompleted {
		t.Fatalf("isolated turn %s", res.Status)
	}
	if slices.ContainsFunc(res.Items, func(it appserver.Item) bool { return it.Type == "commandExecution" }) {
		t.Fatal("a command ran on the isolated thread")
	}
	if _, err := os.Stat(isolatedFile); err == nil {
		t.Fatal("the forced command wrote its file")
	}
	outs := r.stub.RequestsContaining("FORCE1")
	last := outs[len(outs)-1].FunctionCallOutputs()
	if len(last) != 1 || last[0].Output != "unsupported call: exec_command" {
		t.Fatalf("model told %+v", last)
	}

	plain := startThread(t, c, r.srv, appserver.ThreadStartParams{Sandbox: appserver.SandboxDangerFullAccess, Ephemeral: true}, nil)
	res = runTurn(t, plain, "FORCE2 exec")
	if !slices.ContainsFunc(res.Items, func(it appserver.Item) bool {
		return it.Type == "commandExecution" && it.ExitCode != nil && *it.ExitCode == 0
	}) {
		t.Fatalf("the command did not run on the plain thread: %+v", res.Items)
	}
	if _, err := os.Stat(plainFile); err != nil {
		t.Fatalf("plain thread: %v", err)
	}
}

// For a model in Codex's catalog the same config does not leave only the
// dynamic tools: apply_patch and the MCP-resource helpers remain.
func TestNativeToolIsolationCatalogModel(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	var list struct {
		Data []struct {
			ID        string `json:"id"`
			IsDefault bool   `json:"isDefault"`
		} `json:"data"`
	}
	if err := c.Call(testCtx(t, 30*time.Second), "model/list", map[string]any{}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data) == 0 {
		t.Fatal("model/list is empty")
	}
	model := list.Data[0].ID
	for _, m := range list.Data {
		if m.IsDefault {
			model = m.ID
		}
	}
	th := startThread(t, c, r.srv, appserver.ThreadStartParams{Model: model, DynamicTools: dynamicTools(),
		Config: appserver.NativeToolsOffConfig(), Ephemeral: true}, nil)
	if res := runTurn(t, th, "CATALOG hello"); res.Status != appserver.TurnCompleted {
		t.Fatalf("turn %s", res.Status)
	}
	req := r.stub.RequestsContaining("CATALOG")[0]
	if req.Model != model {
		t.Fatalf("request model %q, want %q", req.Model, model)
	}
	if req.HasTools {
		t.Fatalf("catalog model got a tools field: %v", req.ToolNames())
	}
	nested := req.CodeModeTools()
	t.Logf("catalog model %s: additional tools %v; tools inside exec %v", model, req.AdditionalTools(), nested)
	for _, want := range []string{"apply_patch", "list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource", "lookup_weather"} {
		if !slices.Contains(nested, want) {
			t.Errorf("expected %s to remain for the catalog model; nested tools %v", want, nested)
		}
	}
	for _, gone := range []string{"exec_command", "write_stdin", "view_image", "request_user_input"} {
		if slices.Contains(nested, gone) || slices.Contains(req.AdditionalTools(), "functions."+gone) {
			t.Errorf("%s still offered to the catalog model", gone)
		}
	}
}

// Approval requests are handed to the callback; a decline is visible and
// nothing runs.
func TestApprovalRequestDeclined(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	target := filepath.Join(r.srv.Workdir, "approved.txt")
	r.stub.When("APPROVE", stubmodel.CallJSON("exec_command", map[string]string{"cmd": "touch " + target}))

	var seen []appserver.ApprovalRequest
	th := startThread(t, c, r.srv, appserver.ThreadStartParams{ApprovalPolicy: appserver.ApprovalUntrusted, Ephemeral: true},
		&appserver.Handlers{Approval: func(ctx context.Context, req appserver.ApprovalRequest) appserver.ApprovalDecision {
			seen = append(seen, req)
			return appserver.ApprovalDecline
		}})
	res := runTurn(t, th, "APPROVE touch")
	if res.Status != appserver.TurnCompleted {
		t.Fatalf("turn %s", res.Status)
	}
	if len(seen) != 1 || seen[0].Method != appserver.MethodCommandApproval || !strings.Contains(seen[0].Command, "touch") ||
		seen[0].ThreadID != th.ID || seen[0].TurnID != res.TurnID {
		t.Fatalf("approval callback saw %+v", seen)
	}
	if len(res.ServerRequests) != 1 || res.ServerRequests[0].Kind != appserver.KindApproval || !res.ServerRequests[0].Declined {
		t.Fatalf("declined approval not visible: %+v", res.ServerRequests)
	}
	var decision struct{ Decision string }
	_ = json.Unmarshal(res.ServerRequests[0].Response, &decision)
	if decision.Decision != "decline" {
		t.Fatalf("answered %s", res.ServerRequests[0].Response)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the declined command ran")
	}
	reqs := r.stub.RequestsContaining("APPROVE")
	outs := reqs[len(reqs)-1].FunctionCallOutputs()
	if len(outs) != 1 {
		t.Fatalf("model told %+v", outs)
	}
	if !strings.Contains(outs[0].Output, "rejected by user") {
		t.Errorf("the model was not told about the decline: %q", outs[0].Output)
	}
	var cmds []string
	for _, it := range res.Items {
		if it.Type == "commandExecution" {
			cmds = append(cmds, it.Status)
		}
	}
	if !slices.Equal(cmds, []string{"declined"}) {
		t.Errorf("commandExecution items %v, want one declined", cmds)
	}
}
