package codex

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// commandParams is a command approval as Codex 0.169.0 sends it, with
// fields added or replaced by extra.
func commandParams(t *testing.T, extra map[string]any) json.RawMessage {
	t.Helper()
	p := map[string]any{"kind": "command", "threadId": "th-1", "turnId": "tu-1", "itemId": "call_3", "startedAtMs": 1796633640742,
		"environmentId": "local", "command": "/bin/bash -lc 'echo x >> m'", "cwd": "/w",
		"commandActions":              []any{map[string]any{"type": "unknown", "command": "echo x >> m"}},
		"proposedExecpolicyAmendment": []any{"/bin/bash", "-lc", "echo x >> m"},
		"availableDecisions":          []any{"accept", "cancel"}}
	for k, v := range extra {
		if v == nil {
			delete(p, k)
		} else {
			p[k] = v
		}
	}
	return mustJSON(t, p)
}

// permissionsTurn is a turn far enough along to take approval requests,
// without a runtime behind it.
func permissionsTurn(t *testing.T, rec *recorder) *Turn {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	sent := make(chan struct{})
	close(sent)
	return &Turn{hooks: rec.hooks(), native: newNativeRequests(), promptSent: sent, turnCtx: ctx, cancelTurn: cancel}
}

// TestPermissionsRequestShowsItsGrant: a permissions request reaches the
// client with the whole object approving grants (Codex's permissions,
// returned as they are), not only the model's reason. One whose grant
// cannot be shown — too large, not an object, missing — is denied without
// asking, and the decline says why.
func TestPermissionsRequestShowsItsGrant(t *testing.T) {
	t.Parallel()
	grant := `{"fileSystem":{"write":["/","/root/.ssh"]},"network":{"enabled":true}}`
	var asked int
	rec := &recorder{approve: func(_ context.Context, req wire.ApprovalRequest) (wire.ApprovalDecision, error) {
		asked++
		return wire.ApproveOnce, nil
	}}
	tr := permissionsTurn(t, rec)
	params := json.RawMessage(`{"threadId":"th","turnId":"tu","itemId":"perm-1","cwd":"/w","reason":"read one file","permissions": ` + grant + `}`)
	if d := tr.onApproval(t.Context(), appserver.ApprovalRequest{Method: appserver.MethodPermissions, Params: params}); d != appserver.ApprovalAccept {
		t.Fatalf("decision %q", d)
	}
	reqs := rec.approvalRequests()
	if asked != 1 || len(reqs) != 1 || reqs[0].Kind != wire.ApprovalPermissions || string(reqs[0].Permissions) != grant || reqs[0].Reason != "read one file" {
		t.Fatalf("asked %d; requests %+v", asked, reqs)
	}
	if b, _ := json.Marshal(reqs[0]); !strings.Contains(string(b), `"permissions":`+grant) {
		t.Fatalf("the event on the wire: %s", b)
	}

	big := `{"fileSystem":{"write":["` + strings.Repeat("a", wire.MaxApprovalPermissionsBytes) + `"]}}`
	for name, perms := range map[string]string{
		"too large":     `,"permissions":` + big,
		"not an object": `,"permissions":["network"]`,
		"missing":       ``,
		"null":          `,"permissions":null`,
	} {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{approve: func(context.Context, wire.ApprovalRequest) (wire.ApprovalDecision, error) {
				t.Error("asked for a grant it cannot show")
				return wire.ApproveOnce, nil
			}}
			tr := permissionsTurn(t, rec)
			params := json.RawMessage(`{"threadId":"th","turnId":"tu","itemId":"perm-2","cwd":"/w","reason":"harmless"` + perms + `}`)
			if d := tr.onApproval(t.Context(), appserver.ApprovalRequest{Method: appserver.MethodPermissions, Params: params}); d != appserver.ApprovalDecline {
				t.Fatalf("decision %q", d)
			}
			if reqs, res := rec.approvalRequests(), rec.resolutions(); len(reqs) != 0 || len(res) != 1 || res[0].Resolution != wire.ResolvedDenied {
				t.Fatalf("requests %+v, resolutions %+v", reqs, res)
			}
			tr.mu.Lock()
			msg, report := tr.declineReport(appserver.ServerRequestHandled{EventMeta: appserver.EventMeta{Method: appserver.MethodPermissions, Params: params}})
			tr.mu.Unlock()
			if !report || !strings.Contains(msg, "declined without asking: it") {
				t.Fatalf("decline report %q %v", msg, report)
			}
		})
	}
}

// TestCommandApprovalShowsAdditionalPermissions: a command that asks for
// permissions beyond the sandbox shows them as its grant.
func TestCommandApprovalShowsAdditionalPermissions(t *testing.T) {
	t.Parallel()
	tr := permissionsTurn(t, &recorder{})
	extra := `{"network":{"enabled":true}}`
	f, refusal := tr.approvalFacts(appserver.ApprovalRequest{Method: appserver.MethodCommandApproval,
		Params: commandParams(t, map[string]any{"additionalPermissions": json.RawMessage(extra)})})
	if refusal != "" || string(f.Permissions) != extra {
		t.Fatalf("permissions %s, refusal %q", f.Permissions, refusal)
	}
	if f, _ := tr.approvalFacts(appserver.ApprovalRequest{Method: appserver.MethodCommandApproval, Params: commandParams(t, nil)}); f.Permissions != nil {
		t.Fatalf("a plain command shows a grant: %s", f.Permissions)
	}
}
