package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The Debian packages of the images. ca-certificates contributes only its
// certificates (to the base), so its dependencies (openssl, debconf) are not
// followed. The userland roots are what Codex's native commands run
// (`/bin/bash -lc …`); the lock holds their dependency closure.
var (
	certPackage      = "ca-certificates"
	userlandRoots    = []string{"bash", "coreutils", "findutils", "grep", "sed"}
	skippedDependsOn = map[string]string{
		"base-files":   "bash depends on it for /etc/profile and friends; the image writes what it needs",
		"debianutils":  "bash depends on it for add-shell/which/run-parts, used by maintainer scripts only",
		"dpkg":         "grep depends on `dpkg | install-info` to register its info page",
		"install-info": "grep depends on `dpkg | install-info` to register its info page",
	}
)

// apt runs apt-get and apt-cache for one architecture against a private
// state (lists, cache, an empty dpkg status) under the cache directory, so
// the machine's own apt state is neither read for versions nor changed. The
// sources are the machine's configured ones.
type apt struct {
	arch string
	dir  string
}

func newApt(cacheDir, arch string) (*apt, error) {
	a := &apt{arch: arch, dir: filepath.Join(cacheDir, "apt", arch)}
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(a.dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	status := filepath.Join(a.dir, "status")
	if _, err := os.Stat(status); os.IsNotExist(err) {
		if err := os.WriteFile(status, nil, 0o644); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *apt) options() []string {
	return []string{
		"-o", "Dir::State::Lists=" + filepath.Join(a.dir, "lists"),
		"-o", "Dir::State::status=" + filepath.Join(a.dir, "status"),
		"-o", "Dir::Cache=" + filepath.Join(a.dir, "cache"),
		"-o", "APT::Architecture=" + a.arch,
		"-o", "APT::Architectures=" + a.arch,
		// The private state is root's; apt's _apt download user cannot write it.
		"-o", "APT::Sandbox::User=root",
	}
}

func (a *apt) run(dir, tool string, args ...string) ([]byte, error) {
	cmd := exec.Command(tool, append(a.options(), args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s (%s): %w\n%s", tool, strings.Join(args, " "), a.arch, err, stderr.String())
	}
	return out, nil
}

func (a *apt) update() error {
	logf("apt-get update (%s, private state in %s)", a.arch, a.dir)
	_, err := a.run("", "apt-get", "-q", "update")
	return err
}

// hasLists reports whether an index was fetched for this state before.
func (a *apt) hasLists() bool {
	m, _ := filepath.Glob(filepath.Join(a.dir, "lists", "*_Packages*"))
	return len(m) > 0
}

// download fetches one pinned package into dir and returns its path.
func (a *apt) download(p debPackage, dir string) (string, error) {
	if _, err := a.run(dir, "apt-get", "-q", "download", p.Name+":"+p.Arch+"="+p.Version); err != nil {
		return "", err
	}
	m, err := filepath.Glob(filepath.Join(dir, "*.deb"))
	if err != nil || len(m) != 1 {
		return "", fmt.Errorf("%s: apt-get download left %d .deb files in %s, want 1", p, len(m), dir)
	}
	return m[0], nil
}

// candidate is the version apt would install of a package, with its sha256
// and the packages it needs at run time (Depends and Pre-Depends; each inner
// list is a group of alternatives).
type candidate struct {
	debPackage
	depends [][]string
}

func (a *apt) candidate(name string) (candidate, error) {
	out, err := a.run("", "apt-cache", "show", "--no-all-versions", name+":"+a.arch)
	if err != nil {
		return candidate{}, err
	}
	fields := controlFields(string(out))
	c := candidate{debPackage: debPackage{Name: name, Arch: a.arch, Version: fields["Version"], SHA256: fields["SHA256"]}}
	if c.Version == "" || !sha256Hex.MatchString(c.SHA256) {
		return candidate{}, fmt.Errorf("apt-cache show %s:%s: no Version and SHA256 in the index", name, a.arch)
	}
	for _, field := range []string{"Pre-Depends", "Depends"} {
		c.depends = append(c.depends, parseDepends(fields[field])...)
	}
	return c, nil
}

// controlFields parses the first stanza of Debian control-file text.
func controlFields(text string) map[string]string {
	fields := map[string]string{}
	var last string
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			if len(fields) > 0 {
				break
			}
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			fields[last] += "\n" + line
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if ok {
			last = k
			fields[k] = strings.TrimSpace(v)
		}
	}
	return fields
}

var versionConstraint = regexp.MustCompile(`\s*\(.*?\)|:any`)

// parseDepends turns "libc6 (>= 2.34), dpkg (>= 1.15.4) | install-info" into
// [[libc6] [dpkg install-info]]; versions are the index's to keep consistent.
func parseDepends(field string) [][]string {
	var groups [][]string
	for _, group := range strings.Split(field, ",") {
		var alts []string
		for _, alt := range strings.Split(group, "|") {
			if name := strings.TrimSpace(versionConstraint.ReplaceAllString(alt, "")); name != "" {
				alts = append(alts, name)
			}
		}
		if len(alts) > 0 {
			groups = append(groups, alts)
		}
	}
	return groups
}

// resolveLock computes the pinned set for one architecture from the current
// index: the certificate package and the userland roots' dependency closure
// (minus skippedDependsOn). A library a new Debian version starts to need
// joins the closure, and shows in the lock's diff.
func (a *apt) resolveLock() (lock, error) {
	var out lock
	seen := map[string]bool{}
	c, err := a.candidate(certPackage)
	if err != nil {
		return nil, err
	}
	out, seen[certPackage] = append(out, c.debPackage), true
	queue := append([]string(nil), userlandRoots...)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		c, err := a.candidate(name)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", name, err)
		}
		out = append(out, c.debPackage)
		for _, alts := range c.depends {
			if next, ok := pickAlternative(alts); ok {
				queue = append(queue, next)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// pickAlternative follows the first alternative that is not skipped; a
// group whose alternatives are all skipped is left out. A virtual package
// or one missing from the index fails in candidate, naming it.
func pickAlternative(alts []string) (string, bool) {
	for _, alt := range alts {
		if _, skip := skippedDependsOn[alt]; !skip {
			return alt, true
		}
	}
	return "", false
}
