package engine

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// relay records one adapter event of the turn: the transcript mirror for
// transcript records, a waiter for host tool calls, then the run's journal,
// which every stream of the run reads. A record the transcript refuses, or
// an event the journal refuses, interrupts the native turn: the turn then
// fails visibly (finish) instead of running on unrecorded.
func (t *runningTurn) relay(ev adapter.Event) {
	if ev.Type == wire.EventPartial && !t.partialSeen {
		t.partialSeen = true
		recordFirstPartial(t.labels, time.Since(t.started.Time))
	}
	payload := mustJSON(ev.Payload())
	if ev.Type == wire.EventTranscript && t.transcriptErr == nil {
		if err := t.e.store.AppendTranscript(t.session, payload); err != nil {
			t.transcriptErr = err
			t.interruptNative()
		}
	}
	if ev.Type == wire.EventToolCall && ev.ToolCall != nil {
		t.e.live.expectTool(toolKey{t.session, t.req.RunID, ev.ToolCall.CallID})
	}
	t.registerRequest(ev)
	if err := t.emit(ev.Type, payload); err != nil && t.writeErr == nil {
		t.writeErr = err
		t.e.log.Error(err, "journal append failed; interrupting the turn", "session", t.session, "runId", t.req.RunID, "event", ev.Type)
		t.interruptNative()
	}
}

// recordingFailure is the error of a turn the dispatcher could not record,
// whose native turn relay interrupted: the journal refused an event, or the
// transcript mirror a record — for its size limit (TranscriptLimitExceeded:
// the session must be reset) or for anything else, a full disk among them
// (HarnessUnavailable, like the journal's). nil when nothing was refused.
func recordingFailure(writeErr, transcriptErr error) *wire.Error {
	switch {
	case writeErr != nil:
		return wire.Errorf(wire.CodeHarnessUnavailable, "", "the dispatcher could not record the turn (its journal refused a write: %v); the native turn was interrupted", writeErr).Touched(false)
	case errors.Is(transcriptErr, store.ErrTranscriptLimitExceeded):
		return wire.Errorf(wire.CodeTranscriptLimitExceeded, "", "%v", transcriptErr).Touched(false)
	case transcriptErr != nil:
		return wire.Errorf(wire.CodeHarnessUnavailable, "", "the dispatcher could not record the turn (its transcript mirror refused a write: %v); the native turn was interrupted", transcriptErr).Touched(false)
	}
	return nil
}

// emit appends one event to the run's journal.
func (t *runningTurn) emit(typ string, payload json.RawMessage) error {
	_, err := t.run.Append(typ, payload)
	return err
}

func (t *runningTurn) interruptNative() {
	if t.native != nil {
		t.native.Interrupt()
	}
}
