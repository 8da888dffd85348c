package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A test binary killed before its cleanup ran (a lane stopped because
// another failed, a timeout) leaves the servers it started behind: they
// have process groups of their own, so the signal to the run's group
// misses them, and they would live on under init. The isolated process is
// therefore the subreaper of everything COMMAND starts, and stops what is
// left when COMMAND has ended.

// becomeSubreaper makes orphans among this process's descendants its
// children instead of init's.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become the subreaper of the command's processes: %w", err)
	}
	return nil
}

// sweepGrace is how long the processes left behind have to exit after
// SIGTERM before SIGKILL.
const sweepGrace = 10 * time.Second

// reapOrphans reaps, until stop is called, the children that exited other
// than the command's own process (which its exec.Cmd waits for): orphans
// handed to this subreaper. It waits for each by pid, never for any child.
func reapOrphans(command int) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for _, p := range descendants(os.Getpid()) {
				if p.zombie && p.parent == os.Getpid() && p.pid != command {
					var ws syscall.WaitStatus
					_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
				}
			}
		}
	}()
	return func() { close(done); <-finished }
}

// sweep stops every descendant still running — SIGTERM, then SIGKILL after
// sweepGrace — reaps them and the orphans that had exited, and returns what
// it stopped ("name[pid]"). Call it only after COMMAND has been waited for:
// it reaps any child.
func sweep() []string {
	var names []string
	for _, p := range descendants(os.Getpid()) {
		if p.zombie {
			continue // exited: reaped below, nothing left running
		}
		names = append(names, fmt.Sprintf("%s[%d]", p.name, p.pid))
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(sweepGrace)
	for {
		reapExited()
		rest := descendants(os.Getpid())
		if len(rest) == 0 {
			return names
		}
		if time.Now().After(deadline) {
			for _, p := range rest {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
			deadline = time.Now().Add(sweepGrace)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// reapExited collects the exit status of every child that has exited.
func reapExited() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

type proc struct {
	pid, parent int
	name        string
	zombie      bool
}

// descendants lists the processes below root, from /proc; zombies too, so
// that sweep returns once it has reaped them.
func descendants(root int) []proc {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	children := map[int][]proc{}
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue // it exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(raw)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		fields := strings.Fields(s[closing+1:])
		if len(fields) < 2 {
			continue
		}
		pid, err1 := strconv.Atoi(strings.TrimSpace(s[:open]))
		ppid, err2 := strconv.Atoi(fields[1])
		if err1 != nil || err2 != nil {
			continue
		}
		children[ppid] = append(children[ppid], proc{pid: pid, parent: ppid, name: s[open+1 : closing], zombie: fields[0] == "Z"})
	}
	var out []proc
	queue := []int{root}
	for len(queue) > 0 {
		for _, c := range children[queue[0]] {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
		queue = queue[1:]
	}
	slices.SortFunc(out, func(a, b proc) int { return a.pid - b.pid })
	return out
}
