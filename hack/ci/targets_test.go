// Package ci holds the checks of the project's own build and CI wiring.
package ci

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeListsEveryTarget keeps the README's targets in step with
// `make help`: every target help lists is in the README (its Quickstart or
// its table of other targets), and every target the README names exists.
func TestReadmeListsEveryTarget(t *testing.T) {
	root := repoRoot(t)
	help := exec.Command("make", "-s", "--no-print-directory", "help")
	help.Dir = root
	out, err := help.Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	var made []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			made = append(made, f[0])
		}
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	named := readmeTargets(string(readme))
	for _, target := range made {
		if target != "help" && !slices.Contains(named, target) {
			t.Errorf("make help lists %q, the README does not (add it to \"Other targets\")", target)
		}
	}
	for _, target := range named {
		if !slices.Contains(made, target) {
			t.Errorf("the README names `make %s`, make help does not list it", target)
		}
	}
}

// readmeTargets are the targets of the Quickstart's commands and of the
// table rows under "Other targets".
func readmeTargets(readme string) []string {
	var out []string
	quick := regexp.MustCompile("(?m)^make ([a-z0-9-]+)(?: && make ([a-z0-9-]+))?")
	for _, m := range quick.FindAllStringSubmatch(section(readme, "## Quickstart"), -1) {
		out = append(out, m[1])
		if m[2] != "" {
			out = append(out, m[2])
		}
	}
	row := regexp.MustCompile("(?m)^\\| `make ([a-z0-9-]+)`")
	for _, m := range row.FindAllStringSubmatch(section(readme, "## Other targets"), -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// section is the text from the heading to the next heading of its level.
func section(doc, heading string) string {
	_, rest, ok := strings.Cut(doc, "\n"+heading)
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		return rest[:i]
	}
	return rest
}

func TestReadmeTargets(t *testing.T) {
	doc := "# x\n## Quickstart\n```sh\nmake run   # a\nmake test && make test-e2e   # b\n```\n## Other targets\n| target | what |\n|---|---|\n| `make lint` | l |\n| `make build` | b |\n## Later\n| `make nope` | n |\n"
	if got, want := readmeTargets(doc), []string{"build", "lint", "run", "test", "test-e2e"}; !slices.Equal(got, want) {
		t.Fatalf("readmeTargets: %q, want %q", got, want)
	}
}
