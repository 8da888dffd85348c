// Package tmpfs gives tests a real file system that runs full: a small tmpfs
// mounted on a test's temporary directory and a file that fills it. Mounting
// needs root (CAP_SYS_ADMIN), which this project's machines and CI have; a
// test without it fails and says so rather than skipping (docs/testing.md).
// Like internal/testutil/goroutines it has no dependencies beyond x/sys, so
// pure unit tests can use it.
package tmpfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// T is what the helpers need of a test: *testing.T, or Ginkgo's GinkgoT()
// (whose Cleanup is DeferCleanup).
type T interface {
	Helper()
	TempDir() string
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Mount mounts a tmpfs of size bytes on a new directory and returns it. The
// tmpfs is unmounted when the test ends, whatever its outcome — register
// cleanups that close files on it after calling Mount, so they run first.
func Mount(t T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatalf("create the mount point: %v", err)
	}
	if err := mount(dir, size); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Fatalf("mounting a %d-byte tmpfs on %s needs root (CAP_SYS_ADMIN): run the tests as root, as CI does: %v", size, dir, err)
		}
		t.Fatalf("mount a %d-byte tmpfs on %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Errorf("unmount the tmpfs on %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes the file name in dir until the file system refuses more
// (ENOSPC) and returns its path. Every block is then taken, though a file
// already there may still grow within its last block.
func Fill(t T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatalf("create the filler file: %v", err)
	}
	defer func() { _ = f.Close() }()
	// Page-sized writes: the last one that fits takes the last free page.
	chunk := make([]byte, os.Getpagesize())
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			return path
		}
	}
}

// Remove removes a filler file, making its space free again.
func Remove(t T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("remove the filler file: %v", err)
	}
}
