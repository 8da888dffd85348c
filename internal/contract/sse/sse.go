// Package sse reads server-sent event streams (text/event-stream) as the
// EventSource rules define them: lines end at CRLF, LF or a lone CR, events
// end at a blank line, `data:` lines join with newlines, comments (`:`) are
// skipped, and an event without its blank line at the end of the stream is
// incomplete and dropped.
package sse

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// Event is one server-sent event.
type Event struct {
	// ID is the event's `id:` (the dispatcher's journal sequence number).
	ID string
	// Type is the event's `event:`, "message" when absent.
	Type string
	// Data is the event's `data:` lines joined with newlines.
	Data []byte
}

// Scanner reads a stream one event at a time.
type Scanner struct {
	sc *bufio.Scanner
	ev Event
}

// NewScanner reads events from r (lines up to 16 MiB).
func NewScanner(r io.Reader) *Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	sc.Split((&lineSplitter{}).split)
	return &Scanner{sc: sc}
}

// lineSplitter splits at CRLF, LF or a lone CR. bufio.ScanLines ends lines
// at LF only, which left a lone CR inside a value (an id or type holding a
// line break, data a line it does not have).
type lineSplitter struct {
	// afterCR: the last line ended with a CR at the end of the data read so
	// far, so an LF that starts the next data belongs to that line end. A CR
	// ends its line at once, without waiting for the next byte: on a live
	// stream that byte may be the next event, seconds away.
	afterCR bool
}

func (l *lineSplitter) split(data []byte, atEOF bool) (int, []byte, error) {
	skip := 0
	if l.afterCR && len(data) > 0 {
		l.afterCR = false
		if data[0] == '\n' {
			skip = 1
		}
	}
	if i := bytes.IndexAny(data[skip:], "\r\n"); i >= 0 {
		end := skip + i
		switch {
		case data[end] == '\n':
			return end + 1, data[skip:end], nil
		case end+1 < len(data) && data[end+1] == '\n':
			return end + 2, data[skip:end], nil
		case end+1 == len(data):
			l.afterCR = true
		}
		return end + 1, data[skip:end], nil
	}
	if atEOF && len(data) > skip {
		return len(data), data[skip:], nil
	}
	return skip, nil, nil
}

// Next reads the next complete event; false at the end of the stream or on a
// read error (see Err).
func (s *Scanner) Next() bool {
	var (
		ev      Event
		data    [][]byte
		hasData bool
	)
	for s.sc.Scan() {
		line := s.sc.Text()
		if line == "" {
			if hasData || ev.Type != "" {
				ev.Data = bytes.Join(data, []byte("\n"))
				if ev.Type == "" {
					ev.Type = "message"
				}
				s.ev = ev
				return true
			}
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Type = value
		case "data":
			data = append(data, []byte(value))
			hasData = true
		}
	}
	return false
}

// Event is the event Next read.
func (s *Scanner) Event() Event { return s.ev }

// Err is the read error that ended the stream, nil at a clean end.
func (s *Scanner) Err() error { return s.sc.Err() }

// Read calls fn for each event of r until r ends or fn returns false. It
// returns the read error (nil at a clean end of the stream).
func Read(r io.Reader, fn func(Event) bool) error {
	s := NewScanner(r)
	for s.Next() {
		if !fn(s.Event()) {
			return nil
		}
	}
	return s.Err()
}
