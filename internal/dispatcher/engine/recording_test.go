package engine

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// A turn the dispatcher could not record fails with the code the client can
// act on: a transcript at its size limit asks for a reset
// (TranscriptLimitExceeded); a journal or transcript mirror that refused a
// write for any other reason — a full disk — is the dispatcher's trouble
// (HarnessUnavailable), its message naming what refused it.
func TestATurnThatCouldNotBeRecordedFailsWithTheCodeOfWhatRefusedIt(t *testing.T) {
	diskFull := fmt.Errorf("write /journal/transcript.jsonl: %w", syscall.ENOSPC)
	limit := &store.TranscriptLimitError{Session: "ns/uid", Size: 500, Adding: 200, Limit: 600}
	for _, tc := range []struct {
		name                    string
		writeErr, transcriptErr error
		code                    wire.ErrorCode
		names                   string
	}{
		{"nothing refused", nil, nil, "", ""},
		{"the journal is full", fmt.Errorf("journal: append event 3: %w", syscall.ENOSPC), nil, wire.CodeHarnessUnavailable, "its journal refused a write"},
		{"the journal and the transcript are full", errors.New("journal: no space"), diskFull, wire.CodeHarnessUnavailable, "its journal refused a write"},
		{"the transcript's disk is full", nil, diskFull, wire.CodeHarnessUnavailable, "its transcript mirror refused a write"},
		{"the transcript is at its size limit", nil, limit, wire.CodeTranscriptLimitExceeded, limit.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := recordingFailure(tc.writeErr, tc.transcriptErr)
			if tc.code == "" {
				if got != nil {
					t.Fatalf("recordingFailure = %v, want nil", got)
				}
				return
			}
			if got == nil || got.Code != tc.code || !strings.Contains(got.Message, tc.names) {
				t.Fatalf("recordingFailure = %v, want code %s with a message containing %q", got, tc.code, tc.names)
			}
		})
	}
}
