package sse

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// encode writes events in the text/event-stream format: one `data:` line per
// line of Data, each event ended by a blank line. The package has no writer
// (the dispatcher writes its own one-line events); this is the format's
// general form, so that everything Read returns must read back unchanged.
func encode(events []Event) []byte {
	var b bytes.Buffer
	for _, ev := range events {
		if ev.ID != "" {
			b.WriteString("id: " + ev.ID + "\n")
		}
		b.WriteString("event: " + ev.Type + "\n")
		for _, line := range bytes.Split(ev.Data, []byte("\n")) {
			b.WriteString("data: ")
			b.Write(line)
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	return b.Bytes()
}

func readAll(t *testing.T, data []byte) []Event {
	t.Helper()
	var got []Event
	if err := Read(bytes.NewReader(data), func(ev Event) bool { got = append(got, ev); return true }); err != nil {
		t.Fatalf("read error on an in-memory stream: %v", err)
	}
	return got
}

// FuzzRead: the reader never panics, an event's id and type never hold a
// line break (CR, LF and CRLF all end a line in text/event-stream, so a
// value can hold none of them), and the events read from any stream,
// written out again, read back identical.
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		"",
		": comment\nid: 1\nevent: partial\ndata: {\"a\":1}\n\n",
		"data: line one\ndata: line two\n\n\n\nid: 3\nevent: result\ndata: {}\n\n",
		"id: 4\nevent: partial\ndata: cut before its blank line",
		"id: 1\r\nevent: x\r\ndata: crlf\r\n\r\n",
		"id: 1\revent: x\rdata: cr\r\r",
		"event: only-a-type\n\n",
		"data\n\ndata:\n\ndata:  two spaces\n\n",
		"id:7\nid\nevent:\n: data: no\nretry: 10\nunknown: x\ndata:x:y\n\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := readAll(t, data)
		for _, ev := range got {
			if strings.ContainsAny(ev.ID, "\r\n") || strings.ContainsAny(ev.Type, "\r\n") {
				t.Fatalf("an event's id or type holds a line break: %q", ev)
			}
			if bytes.ContainsRune(ev.Data, '\r') {
				t.Fatalf("an event's data holds a CR, which ends a line: %q", ev.Data)
			}
			if ev.Type == "" {
				t.Fatalf("an event without a type (it defaults to message): %q", ev)
			}
		}
		again := readAll(t, encode(got))
		if len(again) != len(got) {
			t.Fatalf("read %d events, written out and read again %d:\n%q\n%q", len(got), len(again), got, again)
		}
		for i := range got {
			if got[i].ID != again[i].ID || got[i].Type != again[i].Type || !bytes.Equal(got[i].Data, again[i].Data) {
				t.Fatalf("event %d changed over a round trip: %q, then %q", i, got[i], again[i])
			}
		}
	})
}

// TestLineEndings pins the line ends of text/event-stream: CRLF, LF and a
// lone CR each end a line (FuzzRead found a lone CR kept inside a value).
func TestLineEndings(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []Event
	}{
		{name: "a lone CR ends a data line, and the next line is a field of its own",
			stream: "data:\r0\n\r", want: []Event{{Type: "message", Data: []byte("")}}},
		{name: "lone CRs end every line, the blank line too",
			stream: "id: 1\revent: x\rdata: a\rdata: b\r\r", want: []Event{{ID: "1", Type: "x", Data: []byte("a\nb")}}},
		{name: "CRLF is one line end, not a line end and a blank line",
			stream: "id: 1\r\nevent: x\r\ndata: a\r\ndata: b\r\n\r\n", want: []Event{{ID: "1", Type: "x", Data: []byte("a\nb")}}},
		{name: "LF CR is two line ends: the CR is a blank line",
			stream: "data: a\n\rdata: b\n\n", want: []Event{{Type: "message", Data: []byte("a")}, {Type: "message", Data: []byte("b")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Byte by byte too: a CRLF split across two reads is still one line end.
			for _, r := range []io.Reader{strings.NewReader(tt.stream), iotest.OneByteReader(strings.NewReader(tt.stream))} {
				var got []Event
				if err := Read(r, func(ev Event) bool { got = append(got, ev); return true }); err != nil {
					t.Fatal(err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
				for i := range got {
					if got[i].ID != tt.want[i].ID || got[i].Type != tt.want[i].Type || !bytes.Equal(got[i].Data, tt.want[i].Data) {
						t.Fatalf("event %d: got %q, want %q", i, got[i], tt.want[i])
					}
				}
			}
		})
	}
}

// TestEventEndedByCRIsDeliveredAtOnce: a CR that ends an event's blank line
// delivers the event without waiting for the next byte, which on a live
// stream may be the next event, long after.
func TestEventEndedByCRIsDeliveredAtOnce(t *testing.T) {
	r, w := io.Pipe()
	defer func() { _ = w.Close() }()
	got := make(chan Event, 1)
	done := make(chan error, 1)
	go func() { done <- Read(r, func(ev Event) bool { got <- ev; return false }) }()
	if _, err := w.Write([]byte("data: first\r\r")); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-got:
		if string(ev.Data) != "first" {
			t.Fatalf("event %q", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the event ended by CR CR was not delivered while the stream stayed open")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
