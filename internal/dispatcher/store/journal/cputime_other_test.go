//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package journal

import "time"

// processCPU is not read on this platform.
func processCPU() (time.Duration, bool) { return 0, false }
