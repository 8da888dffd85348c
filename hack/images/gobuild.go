package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// goBinaries are the static Go programs of the images, by image name.
var goBinaries = map[string]string{
	"manager":    "./cmd/manager",
	"dispatcher": "./cmd/dispatcher",
	"stubmodel":  "./internal/testutil/stubmodel/cmd/stubmodel",
	"pause":      "./hack/pause",
}

// goBuild builds the named programs for linux/arch into dir with one go
// command (the packages share its work), reproducibly: no cgo, no paths,
// no build id or VCS stamp, and the architecture level fixed rather than
// taken from the environment.
func goBuild(dir, arch string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", dir + "/"}
	for _, n := range names {
		args = append(args, goBinaries[n])
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOAMD64=v1", "GOARM64=v8.0",
		"GOFLAGS=", "GOEXPERIMENT=", "GOTOOLCHAIN=local")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	logf("go %s (linux/%s)", strings.Join(args, " "), arch)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for linux/%s: %w", arch, err)
	}
	for _, n := range names {
		// go build names each binary after its package directory.
		if _, err := os.Stat(filepath.Join(dir, filepath.Base(goBinaries[n]))); err != nil {
			return fmt.Errorf("go build for linux/%s did not produce %s: %w", arch, n, err)
		}
	}
	return nil
}

func binaryTree(dir, name string) (*tree, error) {
	t := newTree()
	return t, t.copyFile("/"+name, filepath.Join(dir, filepath.Base(goBinaries[name])), 0o755, "go build "+goBinaries[name])
}
