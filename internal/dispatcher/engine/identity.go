package engine

import (
	"path"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// An AgentSession's identity is its UID, never its name: a session deleted
// and created again under its name is another session. Everything the
// dispatcher keeps for a session is keyed by it — the remembered status
// (status.go), the journal and transcript mirror (SessionKey), the session
// lock and running turns, the turn token (httpapi), the native binding
// (trustedBinding) and the working directory on the app-server (workDir).

// SessionKey is the key of the session's journal runs, transcript, lock and
// running turn: "namespace/uid".
func SessionKey(s *v1alpha1.AgentSession) string {
	return journal.SessionKey(s.Namespace, string(s.UID))
}

// workDir is the session's working directory under an app-server's
// workspace root: <root>/<namespace>/<uid>, so a successor under the same
// name starts in an empty directory.
func workDir(root string, s *v1alpha1.AgentSession) string {
	return path.Join(root, s.Namespace, string(s.UID))
}

// trustedBinding refuses a native binding that was not written for this
// object's UID — one written before bindings named their session (an
// upgrade), or copied from another session's status: resuming it would
// continue a conversation that is not this session's. Nothing ran; a reset
// (spec.resetGeneration) starts a new thread.
func trustedBinding(s *v1alpha1.AgentSession) *wire.Error {
	b := s.Status.NativeBinding
	if b == nil || b.Generation != s.Spec.ResetGeneration || b.SessionUID == string(s.UID) {
		return nil
	}
	written := "no session"
	if b.SessionUID != "" {
		written = "session UID " + b.SessionUID
	}
	return wire.Errorf(wire.CodeNativeThreadLost, "",
		"the native binding of AgentSession %s/%s (thread %s) was written for %s, not for this object (UID %s); reset the session (/reset bumps spec.resetGeneration) to start a new thread",
		s.Namespace, s.Name, b.ThreadID, written, s.UID)
}
