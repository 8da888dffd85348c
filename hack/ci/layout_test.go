package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeLayoutNamesEveryPackage keeps the README's Layout section in
// step with the tree: every path it lists exists, and every Go package (of
// any build tag) is a listed path or sits under one whose description names
// it ("internal/platform/ ... access, cachedir, …" names internal/platform/access).
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	entries := layoutEntries(section(string(readme), "## Layout"))
	if len(entries) == 0 {
		t.Fatal("the README has no Layout section with a code block of paths")
	}
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, e.path)); err != nil {
			t.Errorf("the README's Layout lists %s, which does not exist", e.path)
		}
	}
	list := exec.Command("go", "list", "-tags", "e2e,postgres,faults,images", "-f", "{{.Dir}}", "./...")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		if why := layoutMisses(entries, filepath.ToSlash(rel)); why != "" {
			t.Errorf("the README's Layout does not name package %s: %s", rel, why)
		}
	}
}

// layoutEntry is one path of the Layout block with the text that describes
// it (its line and the indented lines after it).
type layoutEntry struct{ path, text string }

// layoutEntries reads the paths of the first code block: the first column,
// which may hold several paths ("test/a/, test/b/"); a line indented by two
// spaces names a path under the directory above it ("  engine/").
func layoutEntries(layout string) []layoutEntry {
	_, block, _ := strings.Cut(layout, "```\n")
	block, _, _ = strings.Cut(block, "```")
	first := regexp.MustCompile(`^((?:[\w.-]+/)*[\w.-]+/?(?:, (?:[\w.-]+/)*[\w.-]+/?)*)(?:\s|$)`)
	var out []layoutEntry
	var group string // the last unindented directory: the parent of sub-entries
	for _, line := range strings.Split(block, "\n") {
		// A sub-entry: a path indented by two spaces, under the group above.
		if sub := strings.TrimPrefix(line, "  "); group != "" && sub != line && !strings.HasPrefix(sub, " ") {
			if m := first.FindStringSubmatch(sub); m != nil {
				out = append(out, layoutEntry{path: group + m[1], text: sub})
				continue
			}
		}
		if strings.HasPrefix(line, " ") && len(out) > 0 {
			// The line continues every path of the line above.
			prev := out[len(out)-1].text
			for i := len(out) - 1; i >= 0 && out[i].text == prev; i-- {
				out[i].text += "\n" + line
			}
			continue
		}
		m := first.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		group = ""
		for _, p := range strings.Split(m[1], ", ") {
			out = append(out, layoutEntry{path: p, text: line})
			if strings.HasSuffix(p, "/") {
				group = p
			}
		}
	}
	return out
}

// layoutMisses says why pkg is not named by entries, or "" when it is.
func layoutMisses(entries []layoutEntry, pkg string) string {
	var under *layoutEntry
	for i, e := range entries {
		dir := strings.TrimSuffix(e.path, "/")
		if pkg == dir {
			return ""
		}
		if strings.HasPrefix(pkg, dir+"/") && (under == nil || len(dir) > len(strings.TrimSuffix(under.path, "/"))) {
			under = &entries[i]
		}
	}
	if under == nil {
		return "no listed path holds it"
	}
	rest := strings.TrimPrefix(pkg, strings.TrimSuffix(under.path, "/")+"/")
	if regexp.MustCompile(`(^|[\s,(:])` + regexp.QuoteMeta(rest) + `/?([\s,):;]|$)`).MatchString(under.text) {
		return ""
	}
	return under.path + "'s description does not name " + rest
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestLayoutMisses(t *testing.T) {
	entries := layoutEntries("\n```\ninternal/platform/       plumbing: access, certs\ninternal/policy/         selection: selection/ (pure),\n                         snapshot/ (reads)\ntest/a/, test/b/         suites\n                         x/ and y/\ninternal/d/              its own:\n  engine/                the engine\n  store/                 journal/ (files)\n```\n")
	for _, tc := range []struct{ pkg, want string }{
		{"internal/platform/access", ""},
		{"internal/platform/certsx", "internal/platform/'s description does not name certsx"},
		{"internal/policy/snapshot", ""},
		{"internal/policy/toolpolicy", "internal/policy/'s description does not name toolpolicy"},
		{"test/b", ""},
		{"test/b/sub", "test/b/'s description does not name sub"},
		{"test/a/x", ""},
		{"test/b/y", ""},
		{"internal/d/engine", ""},
		{"internal/d/store/journal", ""},
		{"internal/d/api", "internal/d/'s description does not name api"},
		{"cmd/x", "no listed path holds it"},
	} {
		if got := layoutMisses(entries, tc.pkg); got != tc.want {
			t.Errorf("layoutMisses(%s) = %q, want %q", tc.pkg, got, tc.want)
		}
	}
}
