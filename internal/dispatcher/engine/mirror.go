package engine

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// movedFromHarness says whether the session's thread, of its current reset
// generation, lives on another AgentHarness than h: the policy (or the
// session's override) moved the session between harnesses. Such a thread
// is never resumed here (prepare), and its conversation reaches the new
// thread only from the dispatcher's transcript mirror (mirrorMessages).
func movedFromHarness(sess *v1alpha1.AgentSession, h *v1alpha1.AgentHarness) bool {
	b := sess.Status.NativeBinding
	return b != nil && b.Generation == sess.Spec.ResetGeneration && b.HarnessName != "" &&
		(b.HarnessNamespace != h.Namespace || b.HarnessName != h.Name)
}

// loadMirror gives a turn whose session moved from another harness (p.mirror)
// the conversation so far; only turns read it (not /decide or completions).
func (e *Engine) loadMirror(sess *v1alpha1.AgentSession, p *prepared) *wire.Error {
	if !movedFromHarness(sess, p.harness) {
		return nil
	}
	var err error
	if p.mirror, p.mirrorDropped, err = e.mirrorMessages(SessionKey(sess)); err != nil {
		return wire.Errorf(wire.CodeHarnessUnavailable, "", "%v", err)
	}
	return nil
}

// mirrorMessages are the user and assistant messages of the session's
// transcript mirror since its last reset (the dispatcher's turns and the
// gateway's own, oldest first), the newest that fit the bounds of a
// gatewayTranscript (wire.MaxGatewayTranscriptMessages and
// MaxGatewayTranscriptBytes), and how many older ones did not fit. Tool
// calls, tool results and reasoning stay behind: another harness's thread
// cannot take them over. The mirror is read as a stream, so memory stays
// within the bounds whatever its size.
func (e *Engine) mirrorMessages(session string) ([]wire.GatewayMessage, int, error) {
	w := &mirrorWriter{}
	if _, err := e.store.ReadTranscript(session, w); err != nil {
		return nil, 0, fmt.Errorf("read the transcript mirror of %s: %w", session, err)
	}
	w.line(w.partial) // a last line without newline (none when the mirror is whole)
	return w.kept, w.dropped, nil
}

// mirrorWriter keeps the newest messages of the JSON lines written to it.
type mirrorWriter struct {
	partial []byte
	kept    []wire.GatewayMessage
	bytes   int
	dropped int
}

func (w *mirrorWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			break
		}
		w.line(append(w.partial, p[:i]...))
		w.partial, p = w.partial[:0], p[i+1:]
	}
	return n, nil
}

// line takes one record: a reset marker forgets everything before it, a
// message is kept, and the oldest go once the bounds are exceeded.
func (w *mirrorWriter) line(l []byte) {
	if len(bytes.TrimSpace(l)) == 0 {
		return
	}
	var r wire.TranscriptRecord
	if json.Unmarshal(l, &r) != nil {
		return
	}
	switch {
	case r.Type == "reset":
		w.kept, w.bytes, w.dropped = nil, 0, 0
		return
	case r.Type != wire.RecordMessage || (r.Role != wire.RoleUser && r.Role != wire.RoleAssistant) || r.Text == "":
		return
	}
	w.kept = append(w.kept, wire.GatewayMessage{Role: r.Role, Text: r.Text})
	w.bytes += len(r.Text)
	for len(w.kept) > wire.MaxGatewayTranscriptMessages || w.bytes > wire.MaxGatewayTranscriptBytes {
		w.bytes -= len(w.kept[0].Text)
		w.kept = w.kept[1:]
		w.dropped++
	}
}
