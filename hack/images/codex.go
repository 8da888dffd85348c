package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
)

// codexDir is where the Codex package's native tree lives in the image.
const codexDir = "/opt/codex"

// codexConfig is /etc/codex/config.toml, the system configuration layer
// Codex reads under the user's CODEX_HOME. It keeps Codex from reaching out
// on its own (update checks, analytics, plugin and app catalogs, model
// discovery); the model provider stays the default `openai` (docs/images.md
// says how to point Codex at another endpoint). The feature list is the one
// measured against the real 0.169 binary (docs/codex-app-server.md, the
// probes' config.toml).
const codexConfig = `# Offline-safe defaults of the harness-operator Codex image (docs/images.md).
# Codex reads this system layer first; CODEX_HOME/config.toml and the
# app-server's requests override it.
` + codexconfig.Offline

// userlandTree is bash, coreutils, grep, sed, findutils and their libraries
// from the locked packages (all but the certificate package), laid out as a
// merged-/usr Debian system, with /bin/sh as bash and nonroot's shell bash.
func userlandTree(pkgs []*debContent) (*tree, error) {
	t := newTree()
	for _, c := range pkgs {
		if err := c.install(t); err != nil {
			return nil, err
		}
	}
	for link, target := range mergedUsrLinks {
		// arm64 has no /usr/lib64: a link to nothing would fail the build.
		if _, ok := t.entries["/"+target]; !ok {
			continue
		}
		if err := t.symlink(link, target, "merged /usr"); err != nil {
			return nil, err
		}
	}
	// Scripts with `#!/bin/sh` run; Debian's dash is not worth a second shell.
	if err := t.symlink("/usr/bin/sh", "bash", "userland"); err != nil {
		return nil, err
	}
	return t, t.replace("/etc/passwd", &entry{kind: kindFile, mode: 0o644, data: []byte(passwd("/bin/bash")), origin: "userland"})
}

// codexTree is the package's whole native tree under /opt/codex, with codex,
// rg and the bundled bubblewrap on PATH through /usr/local/bin (Codex warns
// at every start when bwrap is not on PATH, though it finds its own).
func codexTree(vendor string) (*tree, error) {
	t := newTree()
	err := filepath.WalkDir(vendor, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(vendor, p)
		if err != nil {
			return err
		}
		dst := path.Join(codexDir, filepath.ToSlash(rel))
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return t.dir(dst, 0o755, 0, 0)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return t.symlink(dst, target, "codex package")
		case d.Type().IsRegular():
			// Only the executable bit carries meaning; npm's umask does not.
			mode := int64(0o644)
			if info.Mode()&0o111 != 0 {
				mode = 0o755
			}
			return t.copyFile(dst, p, mode, "codex package")
		default:
			return fmt.Errorf("%s: not a file, directory or symlink", p)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("codex package tree %s: %w", vendor, err)
	}
	for name, target := range map[string]string{"codex": "bin/codex", "rg": "codex-path/rg", "bwrap": "codex-resources/bwrap"} {
		if _, ok := t.entries[path.Join(codexDir, target)]; !ok {
			return nil, fmt.Errorf("codex package tree %s has no %s", vendor, target)
		}
		if err := t.symlink("/usr/local/bin/"+name, path.Join(codexDir, target), "codex package"); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func codexConfigTree() (*tree, error) {
	t := newTree()
	return t, t.file("/etc/codex/config.toml", 0o644, []byte(codexConfig), "codex config")
}

// codexTriple is the Rust target the npm package names its vendor directory after.
func codexTriple(arch string) (triple, npmCPU string, err error) {
	switch arch {
	case "amd64":
		return "x86_64-unknown-linux-musl", "x64", nil
	case "arm64":
		return "aarch64-unknown-linux-musl", "arm64", nil
	}
	return "", "", fmt.Errorf("no Codex package for linux/%s", arch)
}

// codexVendor returns the vendor/<triple> directory of the pinned Codex
// release for arch. The machine's own architecture comes from
// hack/setup-codex.sh (the same installation the tests run); another one is
// the release's platform package (`@openai/codex@<version>-linux-<cpu>`)
// fetched with `npm pack` into the cache.
func codexVendor(cacheDir, arch, version string) (dir, gotVersion string, err error) {
	triple, cpu, err := codexTriple(arch)
	if err != nil {
		return "", "", err
	}
	if arch == runtime.GOARCH {
		args := []string{}
		if version != "" {
			args = append(args, version)
		}
		cmd := exec.Command("hack/setup-codex.sh", args...)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return "", "", fmt.Errorf("hack/setup-codex.sh: %w", err)
		}
		dir = filepath.Dir(filepath.Dir(strings.TrimSpace(string(out))))
	} else {
		if version == "" {
			return "", "", errors.New("-codex-version is needed to build Codex for another architecture than the machine's")
		}
		if dir, err = npmPack(filepath.Join(cacheDir, "codex", version, arch), "@openai/codex@"+version+"-linux-"+cpu); err != nil {
			return "", "", err
		}
		dir = filepath.Join(dir, "vendor", triple)
	}
	if filepath.Base(dir) != triple {
		return "", "", fmt.Errorf("codex tree %s is not for %s", dir, triple)
	}
	var meta struct{ Version string }
	b, err := os.ReadFile(filepath.Join(dir, "codex-package.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		return "", "", fmt.Errorf("codex tree %s: %w", dir, err)
	}
	if meta.Version == "" {
		return "", "", fmt.Errorf("codex tree %s: no version in codex-package.json", dir)
	}
	return dir, meta.Version, nil
}

// npmPack fetches a package tarball into dir (once) and unpacks it to
// dir/package, returning that directory.
func npmPack(dir, spec string) (string, error) {
	pkg := filepath.Join(dir, "package")
	if _, err := os.Stat(filepath.Join(pkg, "package.json")); err == nil {
		return pkg, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	logf("npm pack %s", spec)
	cmd := exec.Command("npm", "pack", "--silent", "--pack-destination", dir, spec)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("npm pack %s: %w", spec, err)
	}
	return pkg, untgz(filepath.Join(dir, strings.TrimSpace(string(out))), dir)
}

func untgz(file, dir string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
			err = writeFile(dst, tr, os.FileMode(h.Mode)&0o755)
		default:
			err = fmt.Errorf("%s: %s has tar type %q", file, h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(dst string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
