package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
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
	out, err := exec.Command("sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!").Output()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("left %s", out)
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
	var left int
	var stopped string
	if _, err := fmt.Sscanf(string(out), "left %d\nstopped %s\n", &left, &stopped); err != nil {
		t.Fatalf("helper output %q: %v", out, err)
	}
	if alive := syscall.Kill(left, 0) == nil; alive {
		_ = syscall.Kill(left, syscall.SIGKILL)
		t.Fatalf("the process the command left behind (pid %d) still runs after the sweep (helper output %q)", left, out)
	}
	if want := "sleep[" + strconv.Itoa(left) + "]"; stopped != want {
		t.Errorf("the sweep reported %q, want %q", stopped, want)
	}
}
