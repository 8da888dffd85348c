//go:build !linux

package tmpfs

import (
	"errors"
	"fmt"
)

func mount(string, int64) error {
	return fmt.Errorf("tmpfs mounts need Linux: %w", errors.ErrUnsupported)
}

func unmount(string) error { return nil }
