package main

import "testing"

// TestVisibleEscapesHiddenCharacters: whatever could move the cursor,
// erase, reorder or hide text is shown as an escape; ordinary text,
// non-Latin scripts and backslashes are shown as they are.
func TestVisibleEscapesHiddenCharacters(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"an ordinary command", `/bin/bash -lc 'printf "a\n" > out.txt'`, `/bin/bash -lc 'printf "a\n" > out.txt'`},
		{"non-Latin text and emoji", "Grüße, 世界, שלום 👋", "Grüße, 世界, שלום 👋"},
		{"a no-break space is a space", "a\u00a0b", "a\u00a0b"},
		{"escape, erase line, carriage return", "rm -rf ~\x1b[2K\rls", `rm -rf ~\x1b[2K\rls`},
		{"newline and tab", "a\nb\tc", `a\nb\tc`},
		{"other C0 controls", "\x00\x07\x08\x0b\x0c\x1f", `\x00\a\b\v\f\x1f`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 controls: CSI and NEL", "a\u009b2Jb\u0085c", `a\u009b2Jb\u0085c`},
		{"bidi override", "ls \u202egnp.exe", `ls \u202egnp.exe`},
		{"bidi isolates and marks", "\u2066a\u2069\u200f\u061c", `\u2066a\u2069\u200f\u061c`},
		{"zero-width characters", "r\u200bm\u200c\u200d\u2060\ufeff", `r\u200bm\u200c\u200d\u2060\ufeff`},
		{"soft hyphen", "rm\u00ad", `rm\u00ad`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"tag characters", "ok\U000e0041\U000e007f", `ok\U000e0041\U000e007f`},
		{"Hangul filler and variation selector", "a\u3164b\ufe0fc", `a\u3164b\ufe0fc`},
		{"private use", "\ue000", `\ue000`},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := visible(tt.in); got != tt.want {
				t.Fatalf("visible(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestVisibleTextKeepsLinesAndScripts: the assistant's answer keeps its
// newlines, tabs and right-to-left marks; terminal controls are escaped.
func TestVisibleTextKeepsLinesAndScripts(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"line 1\n\tline 2\n", "line 1\n\tline 2\n"},
		{"שלום\u200f עולם", "שלום\u200f עולם"},
		{"done\x1b[8m hidden\x1b]52;c;cm0gLXJmIH4=\x07", `done\x1b[8m hidden\x1b]52;c;cm0gLXJmIH4=\a`},
		{"over\rwrite", `over\rwrite`},
		{"c1\u009bcsi", `c1\u009bcsi`},
	}
	for _, tt := range tests {
		if got := visibleText(tt.in); got != tt.want {
			t.Errorf("visibleText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
