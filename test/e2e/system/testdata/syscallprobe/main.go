// Command syscallprobe says which of two system calls the seccomp profile
// it runs under lets through. The system e2e copies it into a server pod
// and runs it there (test/e2e/system/sandbox_test.go).
//
//	keyctl: keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING), which
//	        any process may call; the runtime's default profile refuses it.
//	userns: a child in a new user namespace, what bubblewrap needs.
//
// For each argument it prints "<call>: allowed" or "<call>: refused: <error>".
package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

const (
	keyctlGetKeyringID    = 0
	keySpecSessionKeyring = -3
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "child" {
		return // the userns child: it only has to start
	}
	for _, call := range os.Args[1:] {
		var err error
		switch call {
		case "keyctl":
			// The arguments are those of keyctl(2); create=1 so a missing
			// session keyring is no error.
			session := keySpecSessionKeyring
			if _, _, errno := syscall.RawSyscall(syscall.SYS_KEYCTL, keyctlGetKeyringID, uintptr(session), 1); errno != 0 {
				err = errno
			}
		case "userns":
			cmd := exec.Command("/proc/self/exe", "child")
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
			err = cmd.Run()
		default:
			fmt.Fprintf(os.Stderr, "unknown call %q\n", call)
			os.Exit(2)
		}
		if err != nil {
			fmt.Printf("%s: refused: %v\n", call, err)
		} else {
			fmt.Printf("%s: allowed\n", call)
		}
	}
}
