package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sweepHelperEnv makes the test binary the helper of TestSweepStopsWhatTheCommandLeftBehind.
const sweepHelperEnv = "ISOLATED_SWEEP_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(sweepHelperEnv) != "" {
		sweepHelper()
		return
	}
	os.Exit(m.Run())
}

// sweepHelper is run as isolated's run is: a subreaper runs a command that
// leaves a process of its own session behind (as a test binary killed
// before its cleanup leaves its servers), then sweeps. It prints the
// left-behind process's pid and what the sweep stopped.
func sweepHelper() {
	if err := becomeSubreaper(); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	// A process left running, and an orphan that exits at once: a zombie
	// of this subreaper, which the sweep reaps without reporting it.
	out, err := exec.Command("sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!; setsid sh -c 'echo $$' </dev/null 2>&1 &").Output()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	var left, exited int
	if _, err := fmt.Sscanf(string(out), "%d\n%d\n", &left, &exited); err != nil {
		fmt.Println("error: output", string(out), err)
		os.Exit(1)
	}
	// Until the orphan is a zombie of this process and the other runs sleep
	// (setsid execs it).
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		st, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/stat", exited))
		comm, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/comm", left))
		if err1 == nil && err2 == nil && strings.Contains(string(st), ") Z ") && strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
	}
	fmt.Printf("left %d\nexited %d\n", left, exited)
	fmt.Printf("stopped %s\n", strings.Join(sweep(), " "))
}

func TestSweepStopsWhatTheCommandLeftBehind(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), sweepHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v: %s", err, out)
	}
	var left, exited int
	var stopped string
	if _, err := fmt.Sscanf(string(out), "left %d\nexited %d\nstopped %s\n", &left, &exited, &stopped); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", exited)); err == nil {
		t.Errorf("the orphan that exited (pid %d) was not reaped", exited)
	}
	if alive := syscall.Kill(left, 0) == nil; alive {
		_ = syscall.Kill(left, syscall.SIGKILL)
		t.Fatalf("the process the command left behind (pid %d) still runs after the sweep (helper output %q)", left, out)
	}
	if want := "sleep[" + strconv.Itoa(left) + "]"; stopped != want {
		t.Errorf("the sweep reported %q, want %q", stopped, want)
	}
}
