package selection

import (
	"strings"
	"testing"
)

// Harness ids are compared trimmed and lowercased; lowerTrimmed's one-pass
// path must give what the general path gives, whatever the spelling.
func TestHarnessIDsAreTrimmedAndLowercasedWhateverTheSpelling(t *testing.T) {
	for _, s := range []string{"", "h1", "codex-app-server", "H1", "cOdex", " h1", "h1 ", "\th1\n", "a b", "\x00a", "a\x00",
		"é", "Äb", "\u00a0h1", "h1\u0085", " ", "  "} {
		if got, want := lowerTrimmed(s), strings.ToLower(strings.TrimSpace(s)); got != want {
			t.Errorf("lowerTrimmed(%q) = %q, want %q", s, got, want)
		}
	}
}
