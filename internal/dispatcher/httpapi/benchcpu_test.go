package httpapi_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Where a benchmark's CPU goes, by process: this test process (the
// dispatcher's engine and Handler, and also the benchmark's HTTP client and
// the app-server double, which run in it) and envtest's kube-apiserver and
// etcd, read from /proc (Linux).

// cpuUsage is CPU time by process.
type cpuUsage struct {
	Self, APIServer, Etcd time.Duration
}

// cpuMs is cpuUsage in milliseconds, as the JSON output has it.
type cpuMs struct {
	Self      float64 `json:"selfMs"`
	APIServer float64 `json:"kubeAPIServerMs"`
	Etcd      float64 `json:"etcdMs"`
}

func (u cpuUsage) plus(v cpuUsage) cpuUsage {
	return cpuUsage{u.Self + v.Self, u.APIServer + v.APIServer, u.Etcd + v.Etcd}
}

func (u cpuUsage) minus(v cpuUsage) cpuUsage {
	return cpuUsage{u.Self - v.Self, u.APIServer - v.APIServer, u.Etcd - v.Etcd}
}

// scaled is the usage times f.
func (u cpuUsage) scaled(f float64) cpuUsage {
	g := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f) }
	return cpuUsage{g(u.Self), g(u.APIServer), g(u.Etcd)}
}

// per is the usage divided by n turns, in milliseconds.
func (u cpuUsage) per(n int) cpuMs {
	if n == 0 {
		return cpuMs{}
	}
	f := func(d time.Duration) float64 { return ms(d) / float64(n) }
	return cpuMs{f(u.Self), f(u.APIServer), f(u.Etcd)}
}

// clockTick is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every Linux architecture Go supports here).
const clockTick = 10 * time.Millisecond

// sampleCPU reads the CPU time used so far by this process and by its
// kube-apiserver and etcd children; a process it cannot read counts zero.
func sampleCPU() cpuUsage {
	u := cpuUsage{Self: procCPU("self")}
	self := strconv.Itoa(os.Getpid())
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		fields := statFields(filepath.Base(p))
		if len(fields) < 13 || fields[1] != self {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join(p, "comm"))
		switch strings.TrimSpace(string(comm)) {
		case "kube-apiserver":
			u.APIServer += cpuOf(fields)
		case "etcd":
			u.Etcd += cpuOf(fields)
		}
	}
	return u
}

// procCPU is the user and system CPU time of /proc/<pid>.
func procCPU(pid string) time.Duration { return cpuOf(statFields(pid)) }

// statFields are the fields of /proc/<pid>/stat after the command (which
// may hold spaces): state, ppid, … — utime and stime are the 12th and 13th.
func statFields(pid string) []string {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	return strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
}

func cpuOf(fields []string) time.Duration {
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * clockTick
}
