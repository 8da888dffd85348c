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

// reservedID is the reserved-id rule of harnessID in one switch; it must say
// what normalizing the id says: an id is reserved when NormalizeRuntimeID
// changes it or it names auto or openclaw.
func TestReservedIDsAreTheIDsNormalizationChangesOrThatNameABuiltin(t *testing.T) {
	for _, id := range []string{"", "default", "pi", "codex-app-server", "auto", "openclaw", "codex", "claude-cli",
		"google-gemini-cli", "h1", "piq", "defaults", "autox", "openclaw2", "codex-app-server2"} {
		n := canonicalRuntimeID(id)
		if got, want := reservedID(id), n != id || n == "auto" || n == "openclaw"; got != want {
			t.Errorf("reservedID(%q) = %v, want %v", id, got, want)
		}
	}
}

// prefixKey orders ids as strings.Compare does whenever two keys differ.
func TestPrefixKeysOrderIDsAsTheIDsCompare(t *testing.T) {
	ids := []string{"", "a", "ab", "ab\x00", "ab\x00c", "abc", "abcdefgh", "abcdefgh1", "abcdefgi", "b", "\xff", "h000", "h001", "h010"}
	for _, a := range ids {
		for _, b := range ids {
			ka, kb := prefixKey(a), prefixKey(b)
			if ka != kb && cmpSign(ka, kb) != strings.Compare(a, b) {
				t.Errorf("prefixKey orders %q and %q unlike their strings", a, b)
			}
			if strings.Compare(a, b) == 0 && ka != kb {
				t.Errorf("equal ids %q have different keys", a)
			}
		}
	}
}

func cmpSign(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
