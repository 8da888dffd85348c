package store

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidateSession checks that session is a store key, "namespace/key": a
// DNS-1123 label namespace and a key that is a DNS-1123 subdomain (the UIDs
// Kubernetes gives objects are). It fails with ErrInvalidSession.
func ValidateSession(session string) error {
	ns, key, ok := strings.Cut(session, "/")
	if !ok || !isDNSLabel(ns) || !isDNSSubdomain(key) {
		return fmt.Errorf("%w: %q is not \"namespace/uid\" of a Kubernetes object", ErrInvalidSession, session)
	}
	return nil
}

// ValidateRunID checks that runID is 1 to MaxRunIDBytes bytes of UTF-8. It
// fails with ErrInvalidRunID.
func ValidateRunID(runID string) error {
	if runID == "" || len(runID) > MaxRunIDBytes || !utf8.ValidString(runID) {
		return fmt.Errorf("%w: must be 1 to %d bytes of UTF-8", ErrInvalidRunID, MaxRunIDBytes)
	}
	return nil
}

// ValidEventType reports whether s is an event type Run.Append accepts:
// [A-Za-z0-9_.:/-]{1,64}.
func ValidEventType(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_' || c == '.' || c == ':' || c == '/' || c == '-':
		default:
			return false
		}
	}
	return true
}

func isDNSLabel(s string) bool {
	return len(s) <= 63 && isLabel(s)
}

func isDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if !isLabel(label) {
			return false
		}
	}
	return true
}

// isLabel reports whether s matches [a-z0-9]([-a-z0-9]*[a-z0-9])?.
func isLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
