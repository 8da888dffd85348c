package sse

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"
)

func TestScanner(t *testing.T) {
	in := ": comment\n" +
		"id: 1\nevent: partial\ndata: {\"a\":1}\n\n" +
		"data: line one\ndata: line two\n\n" +
		"\n\n" +
		"id: 3\nevent: result\ndata: {}\n\n" +
		"id: 4\nevent: partial\ndata: cut before its blank line"
	s := NewScanner(strings.NewReader(in))
	var got []Event
	for s.Next() {
		got = append(got, s.Event())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{ID: "1", Type: "partial", Data: []byte(`{"a":1}`)},
		{Type: "message", Data: []byte("line one\nline two")},
		{ID: "3", Type: "result", Data: []byte(`{}`)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d events %+v, want %d (an incomplete last event is dropped)", len(got), got, len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Type != want[i].Type || string(got[i].Data) != string(want[i].Data) {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestReadStopsAndReportsErrors(t *testing.T) {
	n := 0
	if err := Read(strings.NewReader("event: a\ndata: 1\n\nevent: b\ndata: 2\n\n"), func(Event) bool { n++; return false }); err != nil || n != 1 {
		t.Fatalf("Read returned %v after %d events, want nil after 1 (fn returned false)", err, n)
	}
	boom := errors.New("connection reset")
	if err := Read(iotest.ErrReader(boom), func(Event) bool { return true }); !errors.Is(err, boom) {
		t.Fatalf("Read error = %v, want the reader's error", err)
	}
}
