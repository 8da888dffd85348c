package testutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// apiServerGrace is how long a stopping kube-apiserver may drain before it
// is killed. It stops listening as soon as it is signalled, so the drain is
// part of the outage; envtest's first kube-apiserver, under load, did not
// finish draining within 10 s, which alone outlasts a Lease's renew
// deadline.
const apiServerGrace = time.Second

// RestartAPIServer stops the kube-apiserver (SIGTERM, as a restart does;
// SIGKILL if it has not exited apiServerGrace later), keeps it down for
// down, and starts it again with the same flags: the same address and port,
// the same etcd, the same serving and client CAs and the same
// service-account signing key, so every client and every token issued before
// keeps working. It returns once the new process answers /readyz, with how
// the old one ended.
//
// envtest cannot do this itself: its Stop deletes the certificate directory
// and its Start makes new CAs and keys. The first restart takes the flags
// of the process envtest started; later ones restart the replacement, which
// Stop ends.
func (e *Env) RestartAPIServer(down time.Duration) (string, error) {
	var ended string
	if e.apiArgs == nil {
		pid, args, err := envtestChild(e.env.ControlPlane.APIServer.Path)
		if err != nil {
			return "", err
		}
		if ended, err = terminate(pid, apiServerGrace); err != nil {
			return "", err
		}
		e.apiArgs = args
	} else {
		ended = e.apiServer.Stop(apiServerGrace)
	}
	time.Sleep(down) // the outage itself, not an ordering
	dir := e.env.ControlPlane.APIServer.CertDir
	p, err := StartProcess("kube-apiserver-"+strconv.Itoa(e.restarts), e.env.ControlPlane.APIServer.Path, dir, nil, e.apiArgs...)
	if err != nil {
		return ended, err
	}
	e.restarts++
	e.apiServer = p
	return ended, e.waitAPIServerReady(p, time.Minute)
}

// stopAPIServer stops a kube-apiserver RestartAPIServer started, if any.
func (e *Env) stopAPIServer() {
	if e.apiServer != nil {
		e.apiServer.Stop(30 * time.Second)
	}
}

// envtestChild finds the child of this process that envtest started from
// path (its kube-apiserver or etcd) and returns its pid and flags.
func envtestChild(path string) (int, []string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, err
	}
	self := os.Getpid()
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || parentOf(pid) != self {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
		if len(argv) > 0 && argv[0] == path {
			return pid, argv[1:], nil
		}
	}
	return 0, nil, fmt.Errorf("no process started from %s is a child of this process", path)
}

// parentOf is pid's parent process id, or -1.
func parentOf(pid int) int {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// The command (field 2) may hold spaces; the fields after its ')' are
	// state, ppid, ….
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return -1
	}
	return ppid
}

// terminate sends pid SIGTERM, kills it if it is still there grace later,
// waits until it is gone (envtest's own goroutine reaps it) and says how it
// ended.
func terminate(pid int, grace time.Duration) (string, error) {
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return "", fmt.Errorf("stop kube-apiserver %d: %w", pid, err)
	}
	ended := ""
	for syscall.Kill(pid, 0) == nil {
		switch {
		case ended == "" && time.Since(start) > grace:
			_ = syscall.Kill(pid, syscall.SIGKILL)
			ended = fmt.Sprintf("kube-apiserver did not exit %s after SIGTERM: killed", grace)
		case time.Since(start) > grace+30*time.Second:
			return "", fmt.Errorf("kube-apiserver %d is still there 30s after SIGKILL", pid)
		}
		time.Sleep(20 * time.Millisecond) // the poll's interval; the exit is the fact
	}
	if ended == "" {
		ended = fmt.Sprintf("kube-apiserver exited %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	}
	return ended, nil
}

// waitAPIServerReady polls /readyz as the administrator until it answers
// 200, p exits, or timeout passes.
func (e *Env) waitAPIServerReady(p *Process, timeout time.Duration) error {
	hc, err := rest.HTTPClientFor(e.Config)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	last := ""
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("restarted kube-apiserver exited (log %s): %w", p.LogPath, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("restarted kube-apiserver not ready within %s (log %s): %s", timeout, p.LogPath, last)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(e.Config.Host, "/")+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else if !errors.Is(err, context.DeadlineExceeded) {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond) // the poll's interval; the 200 is the fact
	}
}
