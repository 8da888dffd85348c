package codex

import (
	"encoding/json"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// TestApprovalKey: approve_for_turn covers a later request only when
// nothing but its ids and time differ. A different reason, additional
// permissions, network context, kind, environment, cwd or command, a file
// change's grantRoot or paths: asked again.
func TestApprovalKey(t *testing.T) {
	t.Parallel()
	cmd := func(extra map[string]any) (string, wire.ApprovalRequest, json.RawMessage) {
		p := commandParams(t, extra)
		var ap approvalParams
		_ = json.Unmarshal(p, &ap)
		return appserver.MethodCommandApproval, wire.ApprovalRequest{Kind: wire.ApprovalCommand, Command: deref(ap.Command), Cwd: deref(ap.Cwd),
			Permissions: ap.AdditionalPermissions}, p
	}
	file := func(paths []string, extra map[string]any) (string, wire.ApprovalRequest, json.RawMessage) {
		p := map[string]any{"threadId": "th-1", "turnId": "tu-1", "itemId": "call_9", "startedAtMs": 1}
		for k, v := range extra {
			p[k] = v
		}
		return appserver.MethodFileApproval, wire.ApprovalRequest{Kind: wire.ApprovalFileChange, ChangedPaths: paths}, mustJSON(t, p)
	}
	type req = func() (string, wire.ApprovalRequest, json.RawMessage)
	first := func() (string, wire.ApprovalRequest, json.RawMessage) { return cmd(nil) }
	cases := []struct {
		name  string
		later req
		same  bool
	}{
		{"the same command, new ids and time", func() (string, wire.ApprovalRequest, json.RawMessage) {
			return cmd(map[string]any{"itemId": "call_6", "approvalId": "a-2", "startedAtMs": 1796633641449, "turnId": "tu-1"})
		}, true},
		{"fields in another order, numbers as written", func() (string, wire.ApprovalRequest, json.RawMessage) {
			m, f, _ := cmd(nil)
			return m, f, json.RawMessage(`{"cwd":"/w","command":"/bin/bash -lc 'echo x >> m'","kind":"command","environmentId":"local",` +
				`"availableDecisions":["accept","cancel"],"proposedExecpolicyAmendment":["/bin/bash","-lc","echo x >> m"],` +
				`"commandActions":[{"command":"echo x >> m","type":"unknown"}],"itemId":"x","threadId":"th-1","turnId":"tu-1","startedAtMs":2}`)
		}, true},
		{"an escalation's justification", func() (string, wire.ApprovalRequest, json.RawMessage) {
			return cmd(map[string]any{"reason": "write outside the sandbox"})
		}, false},
		{"additional permissions", func() (string, wire.ApprovalRequest, json.RawMessage) {
			return cmd(map[string]any{"additionalPermissions": map[string]any{"network": map[string]any{"enabled": true}}})
		}, false},
		{"a network approval", func() (string, wire.ApprovalRequest, json.RawMessage) {
			return cmd(map[string]any{"networkApprovalContext": map[string]any{"host": "evil.example", "protocol": "https"}})
		}, false},
		{"input to a running command", func() (string, wire.ApprovalRequest, json.RawMessage) {
			return cmd(map[string]any{"kind": "writeStdin"})
		}, false},
		{"another environment", func() (string, wire.ApprovalRequest, json.RawMessage) {
			return cmd(map[string]any{"environmentId": "remote"})
		}, false},
		{"another cwd", func() (string, wire.ApprovalRequest, json.RawMessage) { return cmd(map[string]any{"cwd": "/"}) }, false},
		{"another command", func() (string, wire.ApprovalRequest, json.RawMessage) {
			return cmd(map[string]any{"command": "/bin/bash -lc 'echo x >> m; rm -rf ~'"})
		}, false},
		{"a field Codex adds later", func() (string, wire.ApprovalRequest, json.RawMessage) {
			return cmd(map[string]any{"sandboxPolicy": "none"})
		}, false},
	}
	_, f0, p0 := first()
	k0 := approvalKey(appserver.MethodCommandApproval, f0, p0, false)
	if k0 == "" {
		t.Fatal("a command is not comparable")
	}
	for _, tc := range cases {
		m, f, p := tc.later()
		if got := approvalKey(m, f, p, false) == k0; got != tc.same {
			t.Errorf("%s: same key %v, want %v", tc.name, got, tc.same)
		}
	}
	// Numbers compare as written: float64 would not tell these apart.
	m, f, _ := cmd(nil)
	a := approvalKey(m, f, commandParams(t, map[string]any{"limit": json.Number("9007199254740993")}), false)
	b := approvalKey(m, f, commandParams(t, map[string]any{"limit": json.Number("9007199254740992")}), false)
	if a == b {
		t.Error("two numbers that differ give the same key")
	}

	// File changes: the paths in any order, the request's other fields.
	_, fa, pa := file([]string{"/w/a", "/w/b"}, nil)
	ka := approvalKey(appserver.MethodFileApproval, fa, pa, true)
	for _, tc := range []struct {
		name  string
		paths []string
		extra map[string]any
		same  bool
	}{
		{"the same paths in another order, new ids", []string{"/w/b", "/w/a"}, map[string]any{"itemId": "call_12", "startedAtMs": 9}, true},
		{"another path", []string{"/w/a", "/root/.ssh/authorized_keys"}, nil, false},
		{"a grant root", []string{"/w/a", "/w/b"}, map[string]any{"grantRoot": "/"}, false},
		{"a reason", []string{"/w/a", "/w/b"}, map[string]any{"reason": "write outside the workspace"}, false},
	} {
		m, f, p := file(tc.paths, tc.extra)
		if got := approvalKey(m, f, p, true) == ka; got != tc.same {
			t.Errorf("file change, %s: same key %v, want %v", tc.name, got, tc.same)
		}
	}

	// Not comparable: each is asked for.
	for _, tc := range []struct {
		name             string
		method           string
		f                wire.ApprovalRequest
		params           json.RawMessage
		escalationUnseen bool
	}{
		{"a command whose sandboxing the request does not show", appserver.MethodCommandApproval, f0, p0, true},
		{"a permissions request", appserver.MethodPermissions, wire.ApprovalRequest{Kind: wire.ApprovalPermissions, Permissions: json.RawMessage(`{}`)}, json.RawMessage(`{"permissions":{}}`), false},
		{"an MCP elicitation", appserver.MethodElicitation, wire.ApprovalRequest{Kind: wire.ApprovalMCPElicitation}, json.RawMessage(`{}`), false},
		{"a command without a command line", appserver.MethodCommandApproval, wire.ApprovalRequest{Kind: wire.ApprovalCommand}, json.RawMessage(`{}`), false},
		{"a file change without paths", appserver.MethodFileApproval, wire.ApprovalRequest{Kind: wire.ApprovalFileChange}, json.RawMessage(`{}`), false},
		{"a request that is not an object", appserver.MethodCommandApproval, f0, json.RawMessage(`[1]`), false},
	} {
		if k := approvalKey(tc.method, tc.f, tc.params, tc.escalationUnseen); k != "" {
			t.Errorf("%s: key %q, want none", tc.name, k)
		}
	}
}
