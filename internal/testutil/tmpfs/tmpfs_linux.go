package tmpfs

import (
	"errors"
	"fmt"
	"syscall"
)

func mount(dir string, size int64) error {
	return syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size))
}

// unmount unmounts dir; when a file on it is still open it detaches the
// mount all the same (the machine is restored) and reports the leak.
func unmount(dir string) error {
	err := syscall.Unmount(dir, 0)
	if errors.Is(err, syscall.EBUSY) {
		if derr := syscall.Unmount(dir, syscall.MNT_DETACH); derr != nil {
			return derr
		}
		return fmt.Errorf("a file on it was still open (the mount was detached): %w", err)
	}
	return err
}
