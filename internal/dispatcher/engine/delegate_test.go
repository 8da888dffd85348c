package engine

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// The harness SDK's delegated execution: "OpenClaw demands the exact stored session
// key, store path, and session id; modelSelectionLocked: true; and matching
// agentHarnessId and agentHarnessRuntimeOverride values", and the harness
// owner's list is the consent ("static owner consent"). Each row breaks one
// fact of the first (allowed) row.
func TestDelegateRunsOnlyAnExactlyNamedLockedSessionOnAHarnessThatListsIt(t *testing.T) {
	const voice = "system:serviceaccount:voice:transport"
	session := func(mut func(*v1alpha1.AgentSession)) *v1alpha1.AgentSession {
		s := &v1alpha1.AgentSession{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "s1"},
			Spec: v1alpha1.AgentSessionSpec{SessionKey: "agent:main:s1", SessionID: "s1-id", RuntimeOverride: "codex",
				ModelSelectionLocked: v1alpha1.ModelSelectionLocked},
			Status: v1alpha1.AgentSessionStatus{AgentHarnessID: "codex"},
		}
		if mut != nil {
			mut(s)
		}
		return s
	}
	attempt := func(mut func(*wire.Attempt)) *wire.Attempt {
		a := &wire.Attempt{SessionKey: "agent:main:s1", SessionID: "s1-id", AgentHarnessID: "codex", AgentHarnessRuntimeOverride: "codex"}
		if mut != nil {
			mut(a)
		}
		return a
	}
	harness := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: "harnesses", Name: "codex"},
		Spec: v1alpha1.AgentHarnessSpec{Delegates: []v1alpha1.Delegate{{Kind: v1alpha1.DelegateServiceAccount, Namespace: "voice", Name: "transport"}}}}
	for _, tc := range []struct {
		name     string
		sess     *v1alpha1.AgentSession
		a        *wire.Attempt
		selected string
		user     string
		code     wire.ErrorCode // "" admits
		names    string         // what the message must name
	}{
		{"a listed delegate on an exactly named locked session", session(nil), attempt(nil), "codex", voice, "", ""},
		{"a pin alone names the harness", session(func(s *v1alpha1.AgentSession) { s.Spec.RuntimeOverride = "" }),
			attempt(func(a *wire.Attempt) { a.AgentHarnessRuntimeOverride = "" }), "codex", voice, "", ""},
		{"an unlocked session", session(func(s *v1alpha1.AgentSession) { s.Spec.ModelSelectionLocked = v1alpha1.ModelSelectionUnlocked }),
			attempt(nil), "codex", voice, wire.CodeForbidden, "spec.modelSelectionLocked: Locked"},
		{"the session key omitted", session(nil), attempt(func(a *wire.Attempt) { a.SessionKey = "" }), "codex", voice,
			wire.CodeSessionMismatch, `sessionKey "" must repeat spec.sessionKey "agent:main:s1"`},
		{"the session id omitted", session(nil), attempt(func(a *wire.Attempt) { a.SessionID = "" }), "codex", voice,
			wire.CodeSessionMismatch, "sessionId"},
		{"the pin omitted", session(nil), attempt(func(a *wire.Attempt) { a.AgentHarnessID = "" }), "codex", voice,
			wire.CodeSessionMismatch, "status.agentHarnessId"},
		{"the override omitted", session(nil), attempt(func(a *wire.Attempt) { a.AgentHarnessRuntimeOverride = "" }), "codex", voice,
			wire.CodeSessionMismatch, "spec.runtimeOverride"},
		{"a session that names no harness", session(func(s *v1alpha1.AgentSession) { s.Spec.RuntimeOverride, s.Status.AgentHarnessID = "", "" }),
			attempt(func(a *wire.Attempt) { a.AgentHarnessID, a.AgentHarnessRuntimeOverride = "", "" }), "codex", voice,
			wire.CodeSessionMismatch, "names no harness"},
		{"selection chose another harness than the pin", session(nil), attempt(nil), "other", voice,
			wire.CodeSessionMismatch, `must both name the selected harness "other"`},
		{"a delegate the harness does not list", session(nil), attempt(nil), "codex", "system:serviceaccount:voice:intruder",
			wire.CodeForbidden, "AgentHarness harnesses/codex spec.delegates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := delegateRefusal(tc.sess, tc.a, tc.selected, harness, store.Requester{User: tc.user})
			switch {
			case tc.code == "" && got != nil:
				t.Fatalf("refused: %v", got)
			case tc.code == "":
			case got == nil:
				t.Fatalf("admitted; want %s", tc.code)
			case got.Code != tc.code || !strings.Contains(got.Message, tc.names):
				t.Fatalf("got %s %q; want %s naming %q", got.Code, got.Message, tc.code, tc.names)
			}
		})
	}
}
