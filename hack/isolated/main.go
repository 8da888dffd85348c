// Command isolated runs a test command in a network namespace of its own,
// so that no test can send a packet off the machine by mistake:
//
//	go run ./hack/isolated [-guard | -here] [--] COMMAND [ARG...]
//
// It needs root. It starts COMMAND in a new network namespace where only
// loopback is up, after a guard has proven the isolation without sending a
// packet: the namespace is not the machine's initial one, there is no default route, and a
// UDP connect() to a documentation address fails as unreachable. COMMAND's
// environment has no proxy variables, npm is offline and GOPROXY is off
// (modules are downloaded before, outside).
//
// The proxy address of the tests' own checks, 192.0.2.9, is put on the
// namespace's loopback with listeners on the usual proxy ports: a
// connection to one means some process used a proxy variable that reached
// it, and fails the run even when COMMAND passed.
//
// Run inside a namespace it made (a stage within a stage), it runs the
// guard and COMMAND there. Whatever COMMAND leaves running when it ends is
// stopped (SIGTERM, then SIGKILL), its own process group or not. With -here it does in the namespace it runs in
// what it does in a new one (the end-to-end suite runs in the local
// cluster's namespace, where the cluster's addresses are): the guard, the
// environment, the proxy recorder. With -guard it only runs the guard where
// it is and exits 0 when isolated, 2 when not.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/openclaw/harness-operator/internal/platform/proxyenv"
)

// nsEnv marks a process tree inside an isolated namespace; its value is the
// namespace ("net:[…]").
const nsEnv = "HARNESS_ISOLATED_NETNS"

// proxyAddr is where the tests' proxy checks point proxy variables; proxyPorts
// are the ports a proxy URL usually names.
const proxyAddr = "192.0.2.9"

var proxyPorts = []string{"3128", "8080", "1080", "80", "443"}

func main() {
	guardOnly := flag.Bool("guard", false, "only run the guard here: exit 0 when isolated, 2 when not")
	here := flag.Bool("here", false, "run COMMAND in this network namespace (which the guard must find isolated) instead of a new one")
	inside := flag.Bool("inside", false, "internal: the re-executed process in the new namespace")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: isolated [-guard | -here] [--] COMMAND [ARG...]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *guardOnly {
		if err := check(readFacts()); err != nil {
			fail(2, err.Error())
		}
		fmt.Fprintln(os.Stderr, "isolated: guard passed:", describe())
		return
	}
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	own, _ := os.Readlink("/proc/self/ns/net")
	switch {
	case *inside:
		os.Exit(runInside(flag.Args()))
	case own != "" && os.Getenv(nsEnv) == own:
		// A stage inside a stage: the namespace is already this tool's.
		if err := check(readFacts()); err != nil {
			fail(1, err.Error())
		}
		os.Exit(run(flag.Args()))
	case os.Geteuid() != 0:
		fail(1, "the tests run in a network namespace of their own, which needs root: run this as root")
	case *here:
		os.Exit(runInside(flag.Args()))
	}
	os.Exit(reexec(flag.Args()))
}

// reexec starts this program again with -inside in a new network namespace
// and returns its exit code.
func reexec(args []string) int {
	self, err := os.Executable()
	if err != nil {
		fail(1, err.Error())
	}
	cmd := exec.Command(self, append([]string{"-inside", "--"}, args...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	return runForwarding(cmd, false)
}

// runInside sets the new namespace up, proves it isolated, runs args and
// fails when a process reached the proxy address.
func runInside(args []string) int {
	// The guard first: nothing here may change a namespace it did not prove
	// isolated (with -here, that could be the machine's own).
	if err := check(readFacts()); err != nil {
		fail(1, err.Error())
	}
	for _, ip := range [][]string{{"link", "set", "lo", "up"}, {"addr", "replace", proxyAddr + "/32", "dev", "lo"}} {
		if out, err := exec.Command("ip", ip...).CombinedOutput(); err != nil {
			fail(1, fmt.Sprintf("ip %s: %v: %s", strings.Join(ip, " "), err, out))
		}
	}
	rec, err := record()
	if err != nil {
		fail(1, err.Error())
	}
	fmt.Fprintln(os.Stderr, "isolated: guard passed:", describe())
	code := run(args)
	if seen := rec.stop(); len(seen) > 0 {
		fmt.Fprintf(os.Stderr, "isolated: error: %d connection(s) to the proxy address %s — a process used a proxy variable:\n  %s\n",
			len(seen), proxyAddr, strings.Join(seen, "\n  "))
		return 1
	}
	return code
}

// run runs args with the isolated environment and returns its exit code,
// after stopping whatever args left running (sweep).
func run(args []string) int {
	if err := becomeSubreaper(); err != nil {
		fail(1, err.Error())
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = environ(os.Environ())
	code := runForwarding(cmd, true)
	if left := sweep(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "isolated: stopped %d process(es) the command left behind: %s\n", len(left), strings.Join(left, " "))
	}
	return code
}

// runForwarding runs cmd, passing SIGINT and SIGTERM on, and returns its
// exit code (128+signal when a signal ended it). As a subreaper it reaps
// the orphans that exit meanwhile.
func runForwarding(cmd *exec.Cmd, subreaper bool) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		fail(1, err.Error())
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	if subreaper {
		// Orphans that exit while the command runs are this process's to
		// reap, as init would.
		stop := reapOrphans(cmd.Process.Pid)
		defer stop()
	}
	err := cmd.Wait()
	if cmd.ProcessState == nil {
		fail(1, err.Error())
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// environ is env without proxy variables (any case), with npm offline,
// GOPROXY off and the namespace mark.
func environ(env []string) []string {
	out := make([]string, 0, len(env)+3)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "npm_config_offline", "GOPROXY", nsEnv:
			continue
		}
		if proxyenv.IsProxy(k) {
			continue
		}
		out = append(out, kv)
	}
	own, _ := os.Readlink("/proc/self/ns/net")
	return append(out, "npm_config_offline=true", "GOPROXY=off", nsEnv+"="+own)
}

// describe says what the guard saw, for the log.
func describe() string {
	own, _ := os.Readlink("/proc/self/ns/net")
	return fmt.Sprintf("network namespace %s (the machine's is %s), no default route, UDP connect to %s: network unreachable",
		own, initNetNS(), strings.Join(probeAddrs, " and "))
}

// recorder records connections to the proxy address.
type recorder struct {
	listeners []net.Listener
	mu        sync.Mutex
	seen      []string
	wg        sync.WaitGroup
}

func record() (*recorder, error) {
	r := &recorder{}
	for _, port := range proxyPorts {
		l, err := net.Listen("tcp", net.JoinHostPort(proxyAddr, port))
		if err != nil {
			r.stop()
			return nil, fmt.Errorf("listen on the proxy address: %w", err)
		}
		r.listeners = append(r.listeners, l)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				r.mu.Lock()
				r.seen = append(r.seen, fmt.Sprintf("from %s to %s", c.RemoteAddr(), c.LocalAddr()))
				r.mu.Unlock()
				_ = c.Close()
			}
		}()
	}
	return r, nil
}

// stop closes the listeners and returns the connections they saw.
func (r *recorder) stop() []string {
	for _, l := range r.listeners {
		_ = l.Close()
	}
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}

func fail(code int, msg string) {
	fmt.Fprintln(os.Stderr, "isolated: error:", msg)
	os.Exit(code)
}
