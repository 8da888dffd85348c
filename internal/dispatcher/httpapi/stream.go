package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// DefaultStreamWriteTimeout is the default of Config.StreamWriteTimeout.
const DefaultStreamWriteTimeout = 30 * time.Second

// publishedRun is a run that tells how far its events were published (the
// file journal's runs): a stream flushes only once it has caught up with
// it. A run without it is flushed after every event.
type publishedRun interface {
	Published() int64
}

// stream writes a run's journaled events after afterSeq as
// text/event-stream, following a running run to its end. Events come from
// the store's iterator, so a client never sees an event the store has not
// published. An event is flushed to the client as soon as no further event
// is already waiting, so events appended together leave in one write (with
// the headers when events wait from the start: a new turn's `selected`) and
// none waits for a later one. Each write to the client must complete within
// h.writeWait: a client that stops reading is cut off, and the handler ends
// (the turn goes on; a reconnect resumes it). clock, when not nil, counts
// the HTTP layer's time on a new turn's path to its result.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, run store.Run, afterSeq int64, clock *turnClock) {
	info := run.Info()
	runID := info.RunID
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Set(wire.RunIDHeader, runID)
	out := h.deadlineWriter(w)
	w.WriteHeader(http.StatusOK)
	published, _ := run.(publishedRun)
	if published == nil || published.Published() <= afterSeq {
		// Nothing to send yet: the headers go now, so the client knows
		// its turn is journaled. Otherwise they leave with the events.
		if err := out.flush(); err != nil {
			return
		}
	}
	clock.pause()
	token := h.TurnToken(info.Session, runID)
	var buf bytes.Buffer
	unflushed := false
	for ev, err := range run.Events(r.Context(), afterSeq) {
		if err != nil {
			if unflushed {
				_ = out.flush() // what was written stays true
			}
			if r.Context().Err() == nil && !errors.Is(err, store.ErrClosed) {
				// The run can no longer be read (retention pruned it,
				// its file is damaged): say so rather than just stop.
				// No id: it is not a journaled event.
				b, _ := json.Marshal(h.redacted(toAPIError(err)))
				buf.Reset()
				writeEvent(&buf, "", wire.EventError, b)
				_ = out.writeFlush(buf.Bytes())
			}
			return // otherwise the client left, or the store closed
		}
		payload := ev.Payload
		if ev.Type == wire.EventSelected {
			payload = withTurnFields(payload, runID, token)
		}
		buf.Reset()
		writeEvent(&buf, strconv.FormatInt(ev.Seq, 10), ev.Type, payload)
		if _, err := out.write(buf.Bytes()); err != nil {
			h.log.V(1).Info("turn stream ended: a write to the client failed", "run", runID, "event", ev.Seq, "error", err.Error())
			return
		}
		if ev.Type == wire.EventResult {
			clock.wroteResult(ev.At)
		}
		if published != nil && published.Published() > ev.Seq {
			// The next event is ready: it goes out with this one.
			unflushed = true
			continue
		}
		if err := out.flush(); err != nil {
			h.log.V(1).Info("turn stream ended: a write to the client failed", "run", runID, "event", ev.Seq, "error", err.Error())
			return
		}
		unflushed = false
		clock.flushed()
	}
	if info := run.Info(); info.State == store.StateFailed && len(info.Result) == 0 {
		// A run found running after a restart: its outcome is unknown. No
		// id: it is not a journaled event.
		b, _ := json.Marshal(wire.OutcomeUnknown(info.Reason))
		buf.Reset()
		writeEvent(&buf, "", wire.EventError, b)
		_ = out.writeFlush(buf.Bytes())
		clock.flushed()
		return
	}
	if unflushed && out.flush() == nil {
		clock.flushed()
	}
}

func writeEvent(b *bytes.Buffer, id, typ string, payload json.RawMessage) {
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + typ + "\n")
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	// Journal payloads are compact JSON: one line.
	b.WriteString("data: ")
	b.Write(payload)
	b.WriteString("\n\n")
}

// withTurnFields adds runId and turnToken to the `selected` decision
// (wire.SelectedEvent). The journaled decision is a compact JSON object
// without either field, so they are appended before its closing brace:
// decoding and re-encoding it, with up to 64 candidates, was a third of
// the HTTP layer's CPU per turn (docs/benchmarks/dispatcher.md). Anything
// else — a payload that is not an object, or one that already names either
// field — is merged as a map, the journaled fields' values kept as they are
// and the two fields set.
func withTurnFields(payload json.RawMessage, runID, token string) json.RawMessage {
	runJSON, _ := json.Marshal(runID)
	tokenJSON, _ := json.Marshal(token)
	p := bytes.TrimSpace(payload)
	if len(p) >= 2 && p[0] == '{' && p[len(p)-1] == '}' &&
		!bytes.Contains(p, []byte(`"runId"`)) && !bytes.Contains(p, []byte(`"turnToken"`)) {
		out := make([]byte, 0, len(p)+len(runJSON)+len(tokenJSON)+24)
		out = append(out, p[:len(p)-1]...)
		if len(bytes.TrimSpace(p[1:len(p)-1])) > 0 {
			out = append(out, ',')
		}
		out = append(out, `"runId":`...)
		out = append(out, runJSON...)
		out = append(out, `,"turnToken":`...)
		out = append(out, tokenJSON...)
		return append(out, '}')
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	m["runId"], m["turnToken"] = runJSON, tokenJSON
	out, err := json.Marshal(m)
	if err != nil {
		return payload
	}
	return out
}
