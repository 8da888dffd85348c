// Command pause is the sandbox ("pause") image's process: it holds a Pod's
// namespaces open until the runtime stops the sandbox. It is built from this
// repository so that the local node never pulls an image (docs/images.md).
//
// It does what the upstream pause does and nothing more: block until SIGTERM
// or SIGINT and exit 0, and reap zombie children, which only matters when it
// is PID 1 of a Pod with a shared process namespace (shareProcessNamespace:
// true re-parents the containers' orphans to it).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		reap()
	}
}

// reap collects every exited child without blocking; one SIGCHLD can stand
// for several exits.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
