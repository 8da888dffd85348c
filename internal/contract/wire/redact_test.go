package wire

import "testing"

// TestServerErrorsReachGatewaysWithoutAddressesOrPaths: the messages of
// 5xx errors lose URLs, addresses and absolute paths; a caller's own
// errors keep their words (they name its request).
func TestServerErrorsReachGatewaysWithoutAddressesOrPaths(t *testing.T) {
	for _, tc := range []struct {
		code      ErrorCode
		msg, want string
	}{
		{CodeHarnessUnavailable, `connect to app-server harness-0 of AgentHarness a/b: dial tcp 10.244.1.7:4500: connect: connection refused`,
			`connect to app-server harness-0 of AgentHarness a/b: dial tcp <address>: connect: connection refused`},
		{CodeHarnessUnavailable, `start the turn on app-server h-0: thread/resume: failed to load rollout /var/lib/codex/home/sessions/2026/x.jsonl: no such file`,
			`start the turn on app-server h-0: thread/resume: failed to load rollout <path>: no such file`},
		{CodeHarnessUnavailable, `dial ws://codex.team-a.svc.cluster.local:4500/ws: refused`, `dial <url>: refused`},
		{CodeHarnessUnavailable, `connect to codex.team-a.svc:4500 failed (peer [fd00::1]:4500)`, `connect to <address> failed (peer <address>)`},
		{CodeInternalError, `journal: open "/journal/team-a/abc/run-1.jsonl": permission denied`, `journal: open "<path>": permission denied`},
		{CodeHarnessAtCapacity, `app-server pod h-0 of AgentHarness a/b holds 3 sessions (maxSessionsPerReplica 3)`,
			`app-server pod h-0 of AgentHarness a/b holds 3 sessions (maxSessionsPerReplica 3)`},
		{CodeNotFound, `no such endpoint: GET /v1/nope`, `no such endpoint: GET /v1/nope`},
	} {
		e := Errorf(tc.code, ScopeHarness, "%s", tc.msg)
		got := e.Redacted()
		if got.Message != tc.want || got.Code != tc.code || got.Scope != ScopeHarness {
			t.Errorf("%s %q:\n got %q\nwant %q", tc.code, tc.msg, got.Message, tc.want)
		}
		if e.Message != tc.msg {
			t.Errorf("Redacted changed the original: %q", e.Message)
		}
	}
}
