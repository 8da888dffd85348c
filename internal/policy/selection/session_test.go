package selection

import (
	"errors"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// TestSessionMismatchScope: a mismatch of the model alone lets OpenClaw's
// fallback chain go on to a candidate of another runtime (scope harness);
// an attempt that names another session, pin or override ends it. The
// message tells how the model changes: by updating spec.model, or not at all
// while the session is locked.
func TestSessionMismatchScope(t *testing.T) {
	cases := []struct {
		name   string
		opts   []sopt
		a      wire.Attempt
		scope  wire.Scope
		remedy string // a part of the message
	}{
		{"another model of the provider", nil, wire.Attempt{Provider: "openai", ModelID: "gpt-5.4"},
			wire.ScopeHarness, "Update spec.model before the turn"},
		{"another provider", nil, wire.Attempt{Provider: "anthropic", ModelID: "claude-opus-5"},
			wire.ScopeHarness, "Update spec.model before the turn"},
		{"a provider-qualified model id of another provider", nil, wire.Attempt{ModelID: "azure/gpt-5.5"},
			wire.ScopeHarness, "Update spec.model"},
		{"another model of a locked session", []sopt{locked()}, wire.Attempt{Provider: "openai", ModelID: "gpt-5.4"},
			wire.ScopeHarness, "Its model selection is Locked (spec.modelSelectionLocked), so its model cannot change"},
		{"another session id", nil, wire.Attempt{SessionID: "s-2"}, wire.ScopeNone, `sessionId "s-2"`},
		{"another agent", nil, wire.Attempt{AgentID: "other"}, wire.ScopeNone, `agentId "other"`},
		{"another session key", nil, wire.Attempt{SessionKey: "agent:main:other"}, wire.ScopeNone, `sessionKey`},
		{"another model and another session id", nil, wire.Attempt{SessionID: "s-2", ModelID: "gpt-5.4"},
			wire.ScopeNone, `sessionId "s-2"`},
		{"a pin the session does not have", nil, wire.Attempt{AgentHarnessID: "codex"}, wire.ScopeNone, "status.agentHarnessId"},
		{"another override", []sopt{override("openclaw")}, wire.Attempt{AgentHarnessRuntimeOverride: "codex"},
			wire.ScopeNone, "spec.runtimeOverride"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ValidateAgainstSession(session(openaiGPT, c.opts...), &c.a)
			var e *wire.Error
			if !errors.As(err, &e) || e.Code != wire.CodeSessionMismatch {
				t.Fatalf("err = %v, want SessionMismatch", err)
			}
			if e.Scope != c.scope {
				t.Errorf("scope = %q, want %q (%s)", e.Scope, c.scope, e.Message)
			}
			if !strings.Contains(e.Message, c.remedy) {
				t.Errorf("message %q does not contain %q", e.Message, c.remedy)
			}
			if e.Scope == wire.ScopeNone && strings.Contains(e.Message, "spec.model before") {
				t.Errorf("a mismatch that is not the model's alone offers the model's remedy: %q", e.Message)
			}
		})
	}
}
