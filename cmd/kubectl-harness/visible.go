package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text from the model or the runtime (a command, a reason, a question, a
// tool's arguments) reaches the terminal only through visible or
// visibleText. Raw, a terminal escape sequence, a carriage return or a
// bidi override in it could hide or rewrite what a person is asked to
// approve; escaped, each such character is shown as what it is.

// visible renders s on one line: control characters (C0 with tab and
// newline, DEL, C1), Unicode format characters (bidi overrides and
// isolates, zero-width characters), line and paragraph separators, other
// invisible or unassigned code points and invalid UTF-8 are written as Go
// escapes (\x1b, \r, \n, \u202e, \U000e0041, \xff). Everything else is
// written unchanged, backslashes included: an ordinary command reads as
// it will run.
func visible(s string) string {
	return escapeHidden(s, false)
}

// visibleText is visible for multi-line text (the assistant's answer):
// newlines and tabs stay as they are, and Unicode format characters too,
// since right-to-left text needs its marks and they cannot leave their
// line. Terminal controls (ESC, CR, other C0, DEL, C1) are escaped.
func visibleText(s string) string {
	return escapeHidden(s, true)
}

func escapeHidden(s string, text bool) string {
	if !needsEscape(s, text) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case hidden(r, text):
			b.WriteString(escapeRune(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string, text bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || hidden(r, text) {
			return true
		}
	}
	return false
}

// hidden says whether r must be escaped. In text mode only terminal
// controls are.
func hidden(r rune, text bool) bool {
	if text {
		return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r <= 0x9f)
	}
	if r == ' ' {
		return false
	}
	// Not graphic: control (Cc), format (Cf), private use, surrogate,
	// unassigned, line and paragraph separators. The two property tables
	// add what is graphic but shows nothing: Hangul fillers, variation
	// selectors and the like.
	return !unicode.IsGraphic(r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r)
}

func escapeRune(r rune) string {
	switch r {
	case '\a':
		return `\a`
	case '\b':
		return `\b`
	case '\f':
		return `\f`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	case '\v':
		return `\v`
	}
	switch {
	case r < 0x80:
		return fmt.Sprintf(`\x%02x`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}
