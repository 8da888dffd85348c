package turntoken

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"testing"
)

// TestTokensAreBoundToTheSessionUIDAndRun: a token opens only the turn it
// was issued for — not another run, not a session created again under the
// same name (a new UID), not a dispatcher with another key — and is the
// HMAC the API has always issued, so turns running across the switch keep
// their tokens.
func TestTokensAreBoundToTheSessionUIDAndRun(t *testing.T) {
	key := bytes.Repeat([]byte{7}, KeyBytes)
	k, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	other, err := New(bytes.Repeat([]byte{8}, KeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	const session, runID = "team-a/0b9c3d2e-0001", "run-1"
	token := k.Sign(session, runID)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(session + "\x00" + runID))
	if want := base64.RawURLEncoding.EncodeToString(m.Sum(nil)); token != want {
		t.Fatalf("Sign = %s, want HMAC-SHA256(key, session NUL runId) base64url = %s", token, want)
	}
	for _, tc := range []struct {
		name           string
		k              *Key
		session, runID string
		token          string
		want           bool
	}{
		{"its own turn", k, session, runID, token, true},
		{"another run of the session", k, session, "run-2", token, false},
		{"the session re-created under its name", k, "team-a/0b9c3d2e-0002", runID, token, false},
		{"a dispatcher with another key", other, session, runID, token, false},
		{"no token", k, session, runID, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.k.Verify(tc.session, tc.runID, tc.token); got != tc.want {
				t.Fatalf("Verify = %v, want %v", got, tc.want)
			}
		})
	}
	if _, err := New(key[:16]); err == nil {
		t.Fatal("New accepted a 16-byte key")
	}
}
