// Command testbin runs Go test packages as `go test` does, but keeps each
// package's linked test binary in the project's cache, outside the
// repository: `go test` links every test binary again on every run (its
// cache holds compiled packages and test results, not linked binaries), and
// with -count=1 on about fifty packages the linker was a quarter of `make
// test`'s CPU. `go test -c -o` skips the link when the binary there is up to
// date, for a fresh clone too (the builds are -trimpath).
//
//	go run ./hack/testbin [-p N] [-tags T] [-race] [-run RE] [-v] [-count N] [-timeout D] PACKAGES...
//
// Binaries are built under a lock, in a directory per build configuration
// (tags, -race, GOFLAGS, CGO_ENABLED), then hard-linked into a directory of
// this run, so a concurrent run that relinks one never changes a binary that
// is running. Each runs in its package's directory, as under go test, N at
// once (default GOMAXPROCS). The output is go test's: "ok", "FAIL" and "?"
// lines per package, a failed package's whole output, and with -v every
// package's output (streamed when there is one package).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/openclaw/harness-operator/internal/platform/cachedir"
)

// options are the go test flags testbin understands.
type options struct {
	parallel int
	tags     string
	race     bool
	run      string
	verbose  bool
	count    int
	timeout  time.Duration
}

// pkg is one package with tests.
type pkg struct {
	importPath string
	dir        string
	binary     string // the run's hard link
}

func main() {
	var o options
	flag.IntVar(&o.parallel, "p", runtime.GOMAXPROCS(0), "test binaries to run at once")
	flag.StringVar(&o.tags, "tags", "", "build tags")
	flag.BoolVar(&o.race, "race", false, "build with the race detector")
	flag.StringVar(&o.run, "run", "", "run only the tests matching this regular expression")
	flag.BoolVar(&o.verbose, "v", false, "verbose test output")
	flag.IntVar(&o.count, "count", 1, "run each test this many times")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "panic a test binary after this long (0: never)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testbin [flags] PACKAGES...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	code, err := run(o, flag.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbin: %v\n", err)
		os.Exit(2)
	}
	os.Exit(code)
}

func run(o options, patterns []string) (int, error) {
	pkgs, err := list(o, patterns)
	if err != nil {
		return 0, err
	}
	if len(pkgs) == 0 {
		return 0, nil
	}
	dir, err := configDir(o)
	if err != nil {
		return 0, err
	}
	// The run's links sit beside the binaries: a hard link needs the same
	// file system.
	runs := filepath.Join(filepath.Dir(dir), "runs")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return 0, err
	}
	runDir, err := os.MkdirTemp(runs, "run-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(runDir) }()
	if err := build(o, dir, pkgs, runDir); err != nil {
		return 0, err
	}
	return test(o, pkgs), nil
}

// list prints go test's "no test files" line for the packages without tests
// and returns the others.
func list(o options, patterns []string) ([]*pkg, error) {
	args := []string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{len .TestGoFiles}}\t{{len .XTestGoFiles}}"}
	if o.tags != "" {
		args = append(args, "-tags", o.tags)
	}
	out, err := exec.Command("go", append(args, patterns...)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w%s", err, stderrOf(err))
	}
	var pkgs []*pkg
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("go list: unexpected line %q", line)
		}
		if f[2] == "0" && f[3] == "0" {
			fmt.Printf("?   \t%s\t[no test files]\n", f[0])
			continue
		}
		pkgs = append(pkgs, &pkg{importPath: f[0], dir: f[1]})
	}
	return pkgs, nil
}

// build links (or finds up to date) every package's test binary in dir,
// the configuration's directory, and hard-links it into runDir.
func build(o options, dir string, pkgs []*pkg, runDir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	// go test -c -o DIR/ names each binary after its package path's last
	// element: packages that share one go to groups of their own.
	groups := groupByName(pkgs)
	for i, group := range groups {
		out := filepath.Join(dir, "g"+strconv.Itoa(i)) + string(filepath.Separator)
		args := []string{"test", "-c", "-vet=off", "-o", out}
		if o.tags != "" {
			args = append(args, "-tags", o.tags)
		}
		if o.race {
			args = append(args, "-race")
		}
		for _, p := range group {
			args = append(args, p.importPath)
		}
		cmd := exec.Command("go", args...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
		}
		for _, p := range group {
			linked := filepath.Join(out, path.Base(p.importPath)+".test")
			p.binary = filepath.Join(runDir, strings.ReplaceAll(p.importPath, "/", "_")+".test")
			if err := os.Link(linked, p.binary); err != nil {
				return fmt.Errorf("test binary of %s: %w", p.importPath, err)
			}
		}
	}
	return nil
}

// configDir is the cache directory of the build configuration: everything
// that changes the binaries but not their build IDs' inputs from the source.
func configDir(o options) (string, error) {
	root, err := cachedir.Root()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, v := range []string{"tags=" + o.tags, "race=" + strconv.FormatBool(o.race), "GOFLAGS=" + os.Getenv("GOFLAGS"),
		"CGO_ENABLED=" + os.Getenv("CGO_ENABLED"), "GOEXPERIMENT=" + os.Getenv("GOEXPERIMENT"), runtime.Version()} {
		_, _ = fmt.Fprintln(h, v) // a hash.Hash never fails a write
	}
	return filepath.Join(root, "testbin", hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// groupByName splits pkgs (in import path order) so that no group holds two
// packages whose paths end in the same element; a package's group is stable
// while the set of packages is.
func groupByName(pkgs []*pkg) [][]*pkg {
	sorted := append([]*pkg(nil), pkgs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].importPath < sorted[j].importPath })
	seen := map[string]int{}
	var groups [][]*pkg
	for _, p := range sorted {
		name := path.Base(p.importPath)
		i := seen[name]
		seen[name]++
		if i == len(groups) {
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}

// test runs the binaries, o.parallel at once, and prints go test's lines;
// it returns the exit code.
func test(o options, pkgs []*pkg) int {
	stream := o.verbose && len(pkgs) == 1
	var mu sync.Mutex
	failed := false
	sem := make(chan struct{}, max(o.parallel, 1))
	var wg sync.WaitGroup
	for _, p := range pkgs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var out bytes.Buffer
			var w io.Writer = &out
			if stream {
				w = os.Stdout
			}
			start := time.Now()
			err := runBinary(o, p, w)
			took := time.Since(start).Seconds()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = true
				_, _ = os.Stdout.Write(out.Bytes())
				if !errors.As(err, new(*exec.ExitError)) {
					fmt.Printf("testbin: %s: %v\n", p.importPath, err)
				}
				fmt.Printf("FAIL\t%s\t%.3fs\n", p.importPath, took)
				return
			}
			if o.verbose {
				_, _ = os.Stdout.Write(out.Bytes())
			}
			fmt.Printf("ok  \t%s\t%.3fs\n", p.importPath, took)
		}()
	}
	wg.Wait()
	if failed {
		fmt.Println("FAIL")
		return 1
	}
	return 0
}

// runBinary runs one test binary in its package's directory, as go test
// does, and kills it a minute after its own timeout should have ended it.
func runBinary(o options, p *pkg, w io.Writer) error {
	args := []string{"-test.paniconexit0", "-test.count=" + strconv.Itoa(o.count), "-test.timeout=" + o.timeout.String()}
	if o.verbose {
		args = append(args, "-test.v=true")
	}
	if o.run != "" {
		args = append(args, "-test.run="+o.run)
	}
	ctx := context.Background()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout+time.Minute)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, p.binary, args...)
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 10 * time.Second
	return cmd.Run()
}

// stderrOf returns an exec.ExitError's stderr, for error messages.
func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		var b strings.Builder
		sc := bufio.NewScanner(bytes.NewReader(ee.Stderr))
		for sc.Scan() {
			b.WriteString("\n" + sc.Text())
		}
		return b.String()
	}
	return ""
}
