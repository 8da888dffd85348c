package codex

import (
	"errors"
	"fmt"
	"strings"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// DetachedError reports that the connection to the app-server ended while
// the turn was running (or while its turn/start was in flight). The turn is
// not failed: Codex keeps running it, and it must never be replayed
// (docs/design/contract-rules.md, rule 5). The engine reconnects to the same
// server and calls Turn.Reattach, then Turn.Wait again, which relays the rest
// of the same turn. It unwraps to the *appserver.ConnectionLostError, so
// appserver.MayHaveSideEffects(err) is true.
type DetachedError struct {
	// ThreadID is the turn's thread.
	ThreadID string
	// TurnID is the turn, or empty when the connection ended before the
	// turn/start answer (Reattach then looks the turn up).
	TurnID string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *DetachedError) Error() string {
	turn := e.TurnID
	if turn == "" {
		turn = "(turn/start unanswered)"
	}
	return fmt.Sprintf("codex: connection lost during turn %s of thread %s; the turn keeps running on the server: "+
		"reattach on a new connection, never replay: %v", turn, e.ThreadID, e.Err)
}

// Unwrap returns the cause.
func (e *DetachedError) Unwrap() error { return e.Err }

// ErrTurnNotStarted is returned by Reattach when the turn/start request of a
// detached turn never reached the server: no turn runs, nothing happened.
var ErrTurnNotStarted = errors.New("codex: turn/start did not reach the app-server; no turn was started")

// ErrTurnAttached is returned by Reattach for a turn that is not detached.
var ErrTurnAttached = errors.New("codex: the turn is attached; Reattach only after a *DetachedError")

// ErrThreadNotFound is returned by Start when the app-server cannot load
// the thread to resume — its rollout is not in this server's native home, or
// is there but unreadable (cut short by a crash or a full disk): the
// session's native thread is lost, and only a reset starts a new one.
var ErrThreadNotFound = errors.New("codex: the app-server does not have the thread")

// resumeLost wraps thread/resume's answer in ErrThreadNotFound when it says
// the thread can never be loaded from this server: no rollout (an invalid
// request "no rollout found …") or a rollout it cannot read (an internal
// error "… failed to read session metadata <file> …", for an empty or
// truncated file). The texts are those of the pinned release
// (TestResumeOfUnknownThread, TestResumeOfTruncatedRollout). Anything else
// is returned as it is.
func resumeLost(err error, what string) error {
	var rpc *appserver.RPCError
	if errors.As(err, &rpc) && (strings.HasPrefix(rpc.Message, "no rollout found") ||
		strings.Contains(rpc.Message, "failed to read session metadata")) {
		return fmt.Errorf("%w: %s: %s", ErrThreadNotFound, what, rpc.Message)
	}
	return fmt.Errorf("codex: %s: %w", what, err)
}
