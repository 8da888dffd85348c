//go:build e2e

package chart

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTemplateGolden compares helm template output for each values set with
// testdata/<name>.golden.yaml (-update rewrites them).
func TestTemplateGolden(t *testing.T) {
	for _, name := range valueSets {
		t.Run(name, func(t *testing.T) {
			got := template(t, valuesFile(t, name))
			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read %s (run with -update to create it): %v", golden, err)
			}
			if got != string(want) {
				t.Errorf("helm template with %s differs from %s (run with -update to accept):\n%s", name, golden, lineDiff(string(want), got))
			}
		})
	}
}

// lineDiff shows the first differing lines with some context.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	from := max(0, i-3)
	var b strings.Builder
	b.WriteString("first difference at line " + strconv.Itoa(i+1) + "\n--- want\n")
	for _, l := range w[from:min(len(w), i+5)] {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("+++ got\n")
	for _, l := range g[from:min(len(g), i+5)] {
		b.WriteString("  " + l + "\n")
	}
	return b.String()
}
