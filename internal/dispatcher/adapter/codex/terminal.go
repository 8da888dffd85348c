package codex

import (
	"errors"
	"fmt"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// terminalOf is the terminal of a turn Codex reported ended as info, given
// why the adapter asked Codex to stop it (stopCause: nil, errAborted or
// errTimeout). A turn Codex completed after it was asked to stop ends as
// stopped all the same: Codex does not always honour turn/interrupt (one
// that reaches it while it waits for a host tool call can be lost, and the
// turn goes on once the call failed), and a gateway whose turn passed its
// deadline, or that interrupted it, must not be told it completed.
func terminalOf(info appserver.TurnInfo, stopCause error) wire.Terminal {
	switch info.Status {
	case appserver.TurnCompleted:
		if stopCause != nil {
			term := stopTerminal(stopCause)
			term.Message += "; Codex completed the turn before the interrupt took effect"
			return term
		}
		return wire.Terminal{Kind: wire.TerminalOK}
	case appserver.TurnFailed:
		term := wire.Terminal{Kind: wire.TerminalFailed, Message: "the turn failed"}
		if e := info.Error; e != nil {
			term.Message = e.Message
			if e.AdditionalDetails != nil && *e.AdditionalDetails != "" {
				term.Message += ": " + *e.AdditionalDetails
			}
			term.ErrorInfo = e.ErrorInfo()
		}
		return term
	case appserver.TurnInterrupted:
		return stopTerminal(stopCause)
	default:
		return wire.Terminal{Kind: wire.TerminalFailed, Message: fmt.Sprintf("the turn ended with status %q", info.Status)}
	}
}

// stopTerminal is the terminal of an interrupted turn: a timeout when the
// deadline stopped it, aborted otherwise (an interrupt, or one the adapter
// did not ask for).
func stopTerminal(stopCause error) wire.Terminal {
	if errors.Is(stopCause, errTimeout) {
		return wire.Terminal{Kind: wire.TerminalTimeout, Message: "the turn's deadline passed; it was interrupted"}
	}
	return wire.Terminal{Kind: wire.TerminalAborted, Message: "the turn was interrupted"}
}
