//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package journal

import (
	"fmt"
	"os"
	"runtime"
)

// lockFile refuses to run where flock(2) is not available: a journal without an
// exclusive lock could be opened by two dispatchers at once.
func lockFile(*os.File) error {
	return fmt.Errorf("journal: no exclusive file lock on %s", runtime.GOOS)
}

func unlockFile(*os.File) error { return nil }
