package ci

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every citation in the repository must resolve inside it. The checks:
//
//   - no mention of the original design document, which is not in the
//     repository (its content lives in docs/, its contract rules in
//     docs/design/contract-rules.md);
//   - no numbered tracker reference ("issue" and a number): the tracker is
//     not in the repository, so a sentence says what it means instead. A
//     link to an upstream issue (a URL ending in /issues/N) resolves and is
//     allowed;
//   - no section sign followed by a number: the sections it named were the
//     design document's;
//   - every docs/….md path mentioned anywhere, and every relative link
//     target of a Markdown file, exists in the repository.
//
// The patterns are built from pieces, so that this file does not cite what
// it forbids.
const (
	designDoc   = "DESIGN" + ".md"
	sectionSign = "\u00a7"
)

var (
	// issueRefRE is a tracker reference: "issue" and a number, with or
	// without "#", in any case. The plural needs a "#" or a list of numbers,
	// so that the verb ("issues 2 writes") is not one.
	issueRefRE = regexp.MustCompile(`(?i)\b(?:issue\s*#\s*(\d+)|issue\s+(\d+)|issues\s*#\s*(\d+)|issues\s+(\d+)(?:\s*(?:,|and|or|&)\s*#?\d+)+)`)
	// upstreamIssueRE is a link to an issue of another repository.
	upstreamIssueRE = regexp.MustCompile(`https?://\S+/issues/(\d+)`)
	sectionRE       = regexp.MustCompile(sectionSign + `\s?\d`)
	// docPathRE is a repository path under docs/ that is not the tail of a
	// longer path or of a URL.
	docPathRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./:-])(docs/[A-Za-z0-9_./-]*\.md)\b`)
	// Markdown link targets: inline links and images, and reference
	// definitions.
	inlineLinkRE = regexp.MustCompile(`\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refDefRE     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?([^\s<>]+)>?`)
	codeSpanRE   = regexp.MustCompile("`[^`]*`")
	schemeRE     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// citesDesignDoc reports whether a line mentions the original design document.
func citesDesignDoc(line string) bool {
	return strings.Contains(line, designDoc)
}

// issueRefs returns the tracker references of a line, leaving out those whose
// number the line links as an upstream issue.
func issueRefs(line string) []string {
	linked := map[string]bool{}
	for _, m := range upstreamIssueRE.FindAllStringSubmatch(line, -1) {
		linked[m[1]] = true
	}
	var out []string
	for _, m := range issueRefRE.FindAllStringSubmatch(line, -1) {
		num := m[1] + m[2] + m[3] + m[4]
		if !linked[num] {
			out = append(out, m[0])
		}
	}
	return out
}

// citesSection reports whether a line has a section sign followed by a number.
func citesSection(line string) bool {
	return sectionRE.MatchString(line)
}

// docPaths returns the docs/….md paths a line mentions.
func docPaths(line string) []string {
	var out []string
	for _, m := range docPathRE.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	return out
}

// linkTargets returns the local targets of a Markdown line's links, without
// their #fragment or ?query: links to another site (any URL scheme), pure
// #anchors and anything inside a code span are left out.
func linkTargets(line string) []string {
	line = codeSpanRE.ReplaceAllString(line, "")
	var raw []string
	for _, m := range inlineLinkRE.FindAllStringSubmatch(line, -1) {
		raw = append(raw, m[1])
	}
	if m := refDefRE.FindStringSubmatch(line); m != nil {
		raw = append(raw, m[1])
	}
	var out []string
	for _, t := range raw {
		if schemeRE.MatchString(t) {
			continue
		}
		if i := strings.IndexAny(t, "#?"); i >= 0 {
			t = t[:i]
		}
		if t == "" {
			continue
		}
		if u, err := url.PathUnescape(t); err == nil {
			t = u
		}
		out = append(out, t)
	}
	return out
}

// resolveLink turns a link target of the Markdown file at file (both
// slash-separated, file relative to the repository root) into a path
// relative to the root; a leading "/" is the root. It reports false for a
// target outside the repository.
func resolveLink(file, target string) (string, bool) {
	var p string
	if strings.HasPrefix(target, "/") {
		p = path.Clean(strings.TrimPrefix(target, "/"))
	} else {
		p = path.Join(path.Dir(file), target)
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return "", false
	}
	return p, true
}

// referenceProblems lists the unresolvable references of one file as
// "line: problem". exists says whether a root-relative path (a file or a
// directory) is in the repository.
func referenceProblems(file, text string, exists func(string) bool) []string {
	var out []string
	markdown := strings.HasSuffix(file, ".md")
	fence := ""
	for i, line := range strings.Split(text, "\n") {
		report := func(format string, args ...any) {
			out = append(out, fmt.Sprintf("%d: ", i+1)+fmt.Sprintf(format, args...))
		}
		if citesDesignDoc(line) {
			report("cites %s, which is not in the repository (cite docs/design/contract-rules.md or the doc that covers the point)", designDoc)
		}
		for _, ref := range issueRefs(line) {
			report("%q names a tracker item that is not in the repository: say what it means", ref)
		}
		if citesSection(line) {
			report("a section sign with a number cites a document that is not in the repository")
		}
		for _, p := range docPaths(line) {
			if !exists(p) {
				report("%s does not exist", p)
			}
		}
		if !markdown {
			continue
		}
		if trimmed := strings.TrimSpace(line); strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			switch {
			case fence == "":
				fence = trimmed[:3]
			case strings.HasPrefix(trimmed, fence):
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		for _, target := range linkTargets(line) {
			p, ok := resolveLink(file, target)
			switch {
			case !ok:
				report("link target %s is outside the repository", target)
			case !exists(p):
				report("link target %s (%s) does not exist", target, p)
			}
		}
	}
	return out
}

// skippedFile: vendored and generated trees, lock and checksum files.
func skippedFile(rel string) bool {
	for _, dir := range []string{"clients/openclaw/node_modules/", "clients/openclaw/dist/"} {
		if strings.HasPrefix(rel, dir) {
			return true
		}
	}
	return strings.HasSuffix(rel, ".lock") || strings.HasSuffix(rel, ".sum")
}

// binaryContent uses git's rule: a NUL byte in the first 8000 bytes.
func binaryContent(b []byte) bool {
	return bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0
}

// TestReferencesResolve checks every file git lists (tracked, and untracked
// files that are not ignored, so that a new file is checked before its
// commit).
func TestReferencesResolve(t *testing.T) {
	root := repoRoot(t)
	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	out, err := ls.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	var files []string
	inRepo := map[string]bool{".": true}
	for _, rel := range strings.Split(string(out), "\x00") {
		if rel == "" || inRepo[rel] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			continue // deleted in the work tree
		}
		files = append(files, rel)
		for p := rel; p != "."; p = path.Dir(p) {
			inRepo[p] = true
		}
	}
	exists := func(p string) bool { return inRepo[p] }
	checked := 0
	for _, rel := range files {
		if skippedFile(rel) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil || binaryContent(b) {
			continue
		}
		checked++
		for _, p := range referenceProblems(rel, string(b), exists) {
			t.Errorf("%s:%s", rel, p)
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: is %s the repository?", checked, root)
	}
}

func TestCitesDesignDoc(t *testing.T) {
	for line, want := range map[string]bool{
		"// (" + designDoc + " " + sectionSign + "5 rule 6)": true,
		"see " + designDoc + "'s decision":                   true,
		"// (docs/design/contract-rules.md, rule 6)":         false,
		"the design's cost":                                  false,
	} {
		if got := citesDesignDoc(line); got != want {
			t.Errorf("citesDesignDoc(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestIssueRefs(t *testing.T) {
	const issue, issues = "issue ", "issues "
	for line, want := range map[string][]string{
		"// Engine executes prepared turns (" + issue + "6).": {issue + "6"},
		"(" + issue + "#12)":                                                {issue + "#12"},
		"Status: Issue " + "17 in progress.":                                {"Issue " + "17"},
		"// reached a harness (" + issues + "6 and 12).":                    {issues + "6 and 12"},
		"see " + issues + "#4":                                              {issues + "#4"},
		"[" + issue + "12](https://github.com/openclaw/openclaw/issues/12)": nil,
		"[" + issue + "13](https://github.com/openclaw/openclaw/issues/12)": {issue + "13"},
		"https://github.com/openclaw/openclaw/issues/4821":                  nil,
		"the controller issues 2 writes per turn":                           nil,
		"It issues zero writes on a resync":                                 nil,
		"formatIssue 3 times; resolveIssue(4)":                              nil,
		"--webhook-cert-manager-issuer=x":                                   nil,
		"the issue's goal":                                                  nil,
	} {
		if got := issueRefs(line); !slices.Equal(got, want) {
			t.Errorf("issueRefs(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestCitesSection(t *testing.T) {
	for line, want := range map[string]bool{
		"a " + sectionSign + "7 code":       true,
		"(" + sectionSign + " 4)":           true,
		"rules 1" + sectionSign + "2":       true,
		"the " + sectionSign + " sign":      false,
		"see docs/dispatcher-api.md#errors": false,
	} {
		if got := citesSection(line); got != want {
			t.Errorf("citesSection(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestDocPaths(t *testing.T) {
	const docs = "docs/"
	for line, want := range map[string][]string{
		"// (" + docs + "design/contract-rules.md, rule 6)":    {docs + "design/contract-rules.md"},
		"see " + docs + "api.md's table and " + docs + "x.md.": {docs + "api.md", docs + "x.md"},
		"[api](" + docs + "api.md#agentsession)":               {docs + "api.md"},
		"clients/openclaw/" + docs + "plugin.md":               nil,
		"https://example.com/" + docs + "page.md":              nil,
		"../" + docs + "api.md":                                nil,
		docs + "*.md and " + docs + "<name>.md":                nil,
		docs + "benchmarks/":                                   nil,
	} {
		if got := docPaths(line); !slices.Equal(got, want) {
			t.Errorf("docPaths(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestLinkTargets(t *testing.T) {
	for line, want := range map[string][]string{
		"[rule 6](design/contract-rules.md#rule-6-tool-policy)":         {"design/contract-rules.md"},
		"![plot](benchmarks/a%20b.png \"title\") and [x](../README.md)": {"benchmarks/a b.png", "../README.md"},
		"[errors](#errors) and [site](https://example.com/a.md)":        nil,
		"[mail](mailto:a@example.com)":                                  nil,
		"[ref]: api.md#runtimepolicy":                                   {"api.md"},
		"`[not](a-link.md)` but [this](one.md?plain=1)":                 {"one.md"},
		"plain text (with parentheses) and [brackets]":                  nil,
	} {
		if got := linkTargets(line); !slices.Equal(got, want) {
			t.Errorf("linkTargets(%q) = %q, want %q", line, got, want)
		}
	}
}

func TestResolveLink(t *testing.T) {
	for _, tc := range []struct {
		file, target, want string
		ok                 bool
	}{
		{"docs/api.md", "design/contract-rules.md", "docs/design/contract-rules.md", true},
		{"docs/design/README.md", "../api.md", "docs/api.md", true},
		{"README.md", "docs/ci.md", "docs/ci.md", true},
		{"docs/benchmarks.md", "benchmarks/", "docs/benchmarks", true},
		{"docs/api.md", "/hack/ci/targets_test.go", "hack/ci/targets_test.go", true},
		{"README.md", "../elsewhere.md", "", false},
	} {
		got, ok := resolveLink(tc.file, tc.target)
		if got != tc.want || ok != tc.ok {
			t.Errorf("resolveLink(%q, %q) = %q, %v; want %q, %v", tc.file, tc.target, got, ok, tc.want, tc.ok)
		}
	}
}

func TestReferenceProblems(t *testing.T) {
	exists := func(p string) bool {
		return slices.Contains([]string{"docs", "docs/api.md", "docs/design", "docs/design/contract-rules.md"}, p)
	}
	doc := strings.Join([]string{
		"# Title",
		"See [api](api.md) and [rule 6](design/contract-rules.md#rule-6-tool-policy).",
		"A [broken](gone.md) link, and docs/" + "gone.md in prose.",
		"```sh",
		"echo [x](not-checked.md) " + designDoc,
		"```",
		"(issue " + "3)",
	}, "\n")
	got := referenceProblems("docs/"+"page.md", doc, exists)
	want := []string{
		"3: link target gone.md (docs/" + "gone.md) does not exist",
		"3: docs/" + "gone.md does not exist",
		"5: cites " + designDoc + ", which is not in the repository (cite docs/design/contract-rules.md or the doc that covers the point)",
		"7: \"issue " + "3\" names a tracker item that is not in the repository: say what it means",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("referenceProblems:\n got %q\nwant %q", got, want)
	}
	// Outside Markdown only the mentions count, not link syntax.
	if got := referenceProblems("x.go", "// [a](gone.md)", exists); len(got) != 0 {
		t.Errorf("a Go file's link syntax: %q", got)
	}
}
