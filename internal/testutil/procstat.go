package testutil

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, which
// Linux fixes at 100 on every architecture Go runs the suites on.
const userHZ = 100

// CPUTime is the CPU time (user + system) process pid has used so far,
// from /proc/<pid>/stat, in steps of 10 ms.
func CPUTime(pid int) (time.Duration, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command (field 2) may hold spaces; after its ')' come state (3),
	// ppid (4), … utime (14) and stime (15).
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat has %d fields after the command", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// Memory is a process's resident memory now (VmRSS) and at its peak
// (VmHWM), in bytes, from /proc/<pid>/status.
func Memory(pid int) (rss, peak int64, err error) {
	b, err := StatusBytes(pid, "VmRSS", "VmHWM")
	if err != nil {
		return 0, 0, err
	}
	return b["VmRSS"], b["VmHWM"], nil
}

// StatusBytes reads the named kB fields of /proc/<pid>/status (VmRSS,
// RssFile, …), in bytes; a field the file lacks is an error.
func StatusBytes(pid int, keys ...string) (map[string]int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		key, value, _ := strings.Cut(line, ":")
		if !slices.Contains(keys, key) {
			continue
		}
		kB, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/status %s: %w", pid, key, err)
		}
		out[key] = kB << 10
	}
	for _, k := range keys {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("/proc/%d/status has no %s", pid, k)
		}
	}
	return out, nil
}

// ControlPlanePids are the process ids of the control plane's etcd and
// kube-apiserver (the one RestartAPIServer started, if it did), for a
// benchmark that measures what they spend (CPUTime, Memory).
func (e *Env) ControlPlanePids() ([]int, error) {
	etcd, _, err := envtestChild(e.env.ControlPlane.Etcd.Path)
	if err != nil {
		return nil, err
	}
	if e.apiServer != nil {
		return []int{etcd, e.apiServer.Pid()}, nil
	}
	apiServer, _, err := envtestChild(e.env.ControlPlane.APIServer.Path)
	if err != nil {
		return nil, err
	}
	return []int{etcd, apiServer}, nil
}
