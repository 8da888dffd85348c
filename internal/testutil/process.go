package testutil

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/openclaw/harness-operator/internal/platform/cachedir"
)

// Process is a binary of the project running as its own OS process (the
// manager or the dispatcher beside a test's control plane), its stdout and
// stderr in one log file.
type Process struct {
	Name    string
	LogPath string

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	// stopping is set before Stop signals the process; an exit before that
	// is unexpected (Unexpected reports it).
	stopping   atomic.Bool
	unexpected atomic.Pointer[error]
}

// StartProcess starts bin with args and extra environment variables (on top
// of the test's own), logging to <logDir>/<name>.log. The process gets its own
// process group, so Stop reaches anything it starts, and dies with the test
// binary if that exits without stopping it.
func StartProcess(name, bin, logDir string, env []string, args ...string) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create %s log: %w", name, err)
	}
	defer func() { _ = log.Close() }() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	if RaceEnabled {
		// `go test -race` instruments only the test process: the binaries
		// built for it carry the detector too (BuildBinaries), and the
		// first race they find ends them, which the suite then reports
		// (Unexpected, RaceReport).
		cmd.Env = append(cmd.Env, "GORACE=halt_on_error=1")
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		if !p.stopping.Load() {
			err := fmt.Errorf("%s exited unexpectedly: %w", name, p.waitErr)
			p.unexpected.Store(&err)
		}
		close(p.exited)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Unexpected is the error of an exit nobody asked for, or of a data race the
// process reported (a race detector build), or nil.
func (p *Process) Unexpected() error {
	if e := p.unexpected.Load(); e != nil {
		return errors.Join(*e, p.RaceReport())
	}
	return p.RaceReport()
}

// raceMarker starts every report of the race detector.
const raceMarker = "WARNING: DATA RACE"

// RaceReport is an error carrying the first data-race report in the
// process's log, or nil when there is none.
func (p *Process) RaceReport() error {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return fmt.Errorf("%s: read log for race reports: %w", p.Name, err)
	}
	i := bytes.Index(b, []byte(raceMarker))
	if i < 0 {
		return nil
	}
	report := b[i:]
	if len(report) > 16<<10 {
		report = report[:16<<10]
	}
	return fmt.Errorf("%s reported a data race (log %s):\n%s", p.Name, p.LogPath, report)
}

// WaitReady polls url until it answers 200; the process exiting first, or
// timeout passing, is an error carrying the last answer.
func (p *Process) WaitReady(url string, timeout time.Duration) error {
	probe := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	defer probe.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready: %w", p.Name, p.waitErr)
		default:
		}
		if resp, err := probe.Get(url); err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, b)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not ready after %s: %s", p.Name, url, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop sends SIGTERM, waits up to grace, then kills the process group, and
// says what happened.
func (p *Process) Stop(grace time.Duration) string {
	select {
	case <-p.exited:
		return fmt.Sprintf("%s had exited: %v", p.Name, p.waitErr)
	default:
	}
	p.stopping.Store(true)
	start := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	var what string
	select {
	case <-p.exited:
		what = fmt.Sprintf("%s exited %s after SIGTERM: %v", p.Name, time.Since(start).Round(time.Millisecond), p.waitErr)
	case <-time.After(grace):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		<-p.exited
		what = fmt.Sprintf("%s did not exit %s after SIGTERM: killed", p.Name, grace)
	}
	// Anything left in its group goes too.
	_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	return what
}

// Tail is the last n bytes of the process's log.
func (p *Process) Tail(n int64) string {
	f, err := os.Open(p.LogPath)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err.Error()
	}
	if fi.Size() > n {
		if _, err := f.Seek(fi.Size()-n, io.SeekStart); err != nil {
			return err.Error()
		}
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// BuildBinaries builds the module's commands (e.g. "./cmd/manager") and
// puts them into dir. Every suite of a run asks for the same few binaries,
// so they are built once per build type into a stable directory in the
// project's cache (bin/plain, or bin/race under -race, which builds them
// with -race) and hard-linked into dir. go build skips the link when a
// binary there is up to date, also for a later run from a fresh clone.
func BuildBinaries(dir string, pkgs ...string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cache, err := cachedir.Root()
	if err != nil {
		return err
	}
	stable := filepath.Join(cache, "bin", "plain")
	args := []string{"build"}
	if RaceEnabled {
		stable = filepath.Join(cache, "bin", "race")
		args = append(args, "-race")
	}
	for _, d := range []string{stable, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// The packages of one go test run build at once: one builds, the rest
	// find the binaries up to date.
	lock, err := os.OpenFile(filepath.Join(stable, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", stable, err)
	}
	cmd := exec.Command("go", append(append(args, "-o", stable+string(filepath.Separator)), pkgs...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %w\n%s", pkgs, err, out)
	}
	for _, pkg := range pkgs {
		name := filepath.Base(pkg)
		if err := linkOrCopy(filepath.Join(stable, name), filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// linkOrCopy makes dst a hard link of src, or a copy across file systems.
// A later build that changes src replaces it, so dst keeps what was built.
func linkOrCopy(src, dst string) error {
	_ = os.Remove(dst)
	if os.Link(src, dst) == nil {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// ModuleRoot is the directory of the module's go.mod.
func ModuleRoot() (string, error) { return moduleRoot() }
