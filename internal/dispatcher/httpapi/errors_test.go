package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// The store's refusals that are not the request's fault have codes a
// gateway can act on: a pruned run is gone, a full namespace and a full
// volume pass later (Retry-After), and the volume's paths are not shown.
func TestStoreRefusalsHaveTheirCodes(t *testing.T) {
	pruned := &journal.RunPrunedError{Session: "team-a/uid-1", RunID: "gw-1", State: journal.StateFinished,
		FinishedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		code       wire.ErrorCode
		retryable  bool
		retryAfter string
	}{
		// As the handler's Lookup and the engine's Begin (wrapped) return them.
		{"pruned run", pruned, 410, "RunPayloadPruned", false, ""},
		{"pruned run from the engine", fmt.Errorf("dispatch: journal: %w", pruned), 410, "RunPayloadPruned", false, ""},
		{"full namespace", fmt.Errorf("dispatch: journal: %w",
			&journal.RetentionLimitError{Namespace: "team-a", Runs: 3, Limit: 3, RetryAfter: 57*time.Minute + 400*time.Millisecond}),
			429, "RetentionLimitReached", true, "3420"},
		{"full namespace, wait unknown", &journal.RetentionLimitError{Namespace: "team-a", Runs: 3, Limit: 3},
			429, "RetentionLimitReached", true, ""},
		// As the engine returns the journal's refusal to take a session's lease.
		{"full volume", fmt.Errorf("dispatch: wait for the session lease of team-a/uid-1: journal: write lease.json: %w",
			&os.PathError{Op: "write", Path: "/var/lib/harness/journal/lease.json", Err: syscall.ENOSPC}), 503, "StoreUnavailable", true, "1"},
		{"used-up quota", &os.PathError{Op: "write", Path: "/var/lib/harness/journal/x", Err: syscall.EDQUOT}, 503, "StoreUnavailable", true, "1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			(&Handler{}).writeError(w, tc.err, time.Second)
			var body wire.Error
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatal(err)
			}
			if w.Code != tc.status || body.Code != tc.code || body.Retryable != tc.retryable || w.Header().Get("Retry-After") != tc.retryAfter {
				t.Fatalf("answer %d %+v, Retry-After %q; want %d %s retryable=%v, Retry-After %q",
					w.Code, body, w.Header().Get("Retry-After"), tc.status, tc.code, tc.retryable, tc.retryAfter)
			}
			if strings.Contains(body.Message, "/var/lib") {
				t.Fatalf("the answer shows the volume's path: %q", body.Message)
			}
		})
	}
}
