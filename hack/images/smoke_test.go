//go:build images

package main

// The smoke test of the built Codex image (`make images-smoke`, after
// `make images`): it unpacks codex-app-server.tar and runs it the way a Pod
// does — as 65532, read-only root filesystem, /tmp and the home as the only
// writable places, no network — with the image's own bubblewrap as the
// runtime (needs root, as the node does).

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// homeMountPath is controllers/agentharness.HomeMountPath (HOME and CODEX_HOME).
const homeMountPath = "/var/lib/codex"

type rootfs struct {
	dir    string
	home   string
	config v1.Config
}

func unpackCodexImage(t *testing.T) *rootfs {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the image smoke test runs the image under bubblewrap as root (as the node's runtime does): run it as root")
	}
	dir := os.Getenv("IMAGES_DIR")
	if dir == "" {
		dir = "../../.local/images"
	}
	archive := filepath.Join(dir, "codex-app-server.tar")
	if _, err := os.Stat(archive); err != nil {
		t.Fatalf("%v: run `make images` first (or set IMAGES_DIR)", err)
	}
	p, err := layout.FromPath(untar(t, archive))
	must(t, err)
	idx, err := p.ImageIndex()
	must(t, err)
	m, err := idx.IndexManifest()
	must(t, err)
	img, err := idx.Image(m.Manifests[0].Digest)
	must(t, err)
	cf, err := img.ConfigFile()
	must(t, err)

	r := &rootfs{dir: t.TempDir(), home: t.TempDir(), config: cf.Config}
	fs := mutate.Extract(img)
	defer func() { _ = fs.Close() }()
	extract(t, fs, r.dir)
	// Mount points the runtime creates in a container's root.
	for _, d := range []string{"proc", "dev", strings.TrimPrefix(homeMountPath, "/")} {
		must(t, os.MkdirAll(filepath.Join(r.dir, d), 0o755))
	}
	return r
}

func extract(t *testing.T, r io.Reader, dir string) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		must(t, err)
		dst := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			must(t, os.MkdirAll(dst, os.FileMode(h.Mode)&0o777|0o700))
		case tar.TypeSymlink:
			must(t, os.MkdirAll(filepath.Dir(dst), 0o755))
			must(t, os.Symlink(h.Linkname, dst))
		case tar.TypeReg:
			must(t, writeFile(dst, tr, os.FileMode(h.Mode)&0o777))
			must(t, os.Chmod(dst, os.FileMode(h.Mode)&0o777))
		default:
			t.Fatalf("%s: unexpected tar type %q", h.Name, h.Typeflag)
		}
	}
}

// command runs argv in the image like a restricted Pod: the image's env plus
// HOME and CODEX_HOME on the home volume.
func (r *rootfs) command(ctx context.Context, argv ...string) *exec.Cmd {
	// bwrap maps the sandbox's uid 65532 to root outside, so a home owned
	// by root outside is the nonroot user's own inside.
	args := []string{
		"--ro-bind", r.dir, "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--bind", r.home, homeMountPath,
		"--unshare-all", "--uid", "65532", "--gid", "65532", "--die-with-parent", "--clearenv",
	}
	env := append(append([]string(nil), r.config.Env...), "HOME="+homeMountPath, "CODEX_HOME="+homeMountPath)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(append(args, "--chdir", "/", "--"), argv...)
	return exec.CommandContext(ctx, filepath.Join(r.dir, "opt/codex/codex-resources/bwrap"), args...)
}

// Codex runs its native commands as `/bin/bash -lc …`: bash, coreutils,
// grep, sed, find and their libraries must resolve, codex and rg must be on
// the login shell's PATH, and nothing outside /tmp and the home is writable.
func TestCodexImageRunsALoginShellReadOnlyAsNonroot(t *testing.T) {
	r := unpackCodexImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := strings.Join([]string{
		"id -u; id -un",
		"ls / | sort | tr '\\n' ' '; echo",
		"printf 'a\\nb\\n' | grep -c b",
		"echo hello | sed s/hello/sed-ok/",
		"find /opt/codex -name rg -type f",
		"/usr/bin/env --version | head -1",
		"sh -c 'echo sh-ok'",
		"codex --version",
		"rg --version | head -1",
		"touch /etc/x 2>/dev/null && echo root-writable || echo root-read-only",
		"touch /tmp/x \"$HOME/x\" && echo scratch-writable",
	}, "; ")
	out, err := r.command(ctx, "/bin/bash", "-lc", script).CombinedOutput()
	if err != nil {
		t.Fatalf("bash -lc in the image: %v\n%s", err, out)
	}
	for _, want := range []string{
		"65532\nnonroot\n",
		"bin dev etc home lib lib64 opt proc root sbin tmp usr var \n",
		"\n1\n", "sed-ok", "/opt/codex/codex-path/rg", "env (GNU coreutils)", "sh-ok",
		"codex-cli ", "ripgrep ", "root-read-only", "scratch-writable",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The image's /etc/codex/config.toml is Codex's system layer: the
// phone-home switches are off in the configuration the app-server reports.
func TestCodexImageAppServerStartsWithTheOfflineSystemConfig(t *testing.T) {
	r := unpackCodexImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := r.command(ctx, append(r.config.Entrypoint, r.config.Cmd...)...)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	defer func() { _ = cmd.Wait() }()
	defer func() { _ = stdin.Close() }()
	for _, msg := range []string{
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"images-smoke","version":"1"}}}`,
		`{"method":"initialized"}`,
		`{"id":2,"method":"config/read","params":{"includeLayers":true}}`,
	} {
		_, err := fmt.Fprintln(stdin, msg)
		must(t, err)
	}
	var config struct {
		Config struct {
			CheckForUpdate bool `json:"check_for_update_on_startup"`
			Analytics      struct {
				Enabled bool `json:"enabled"`
			} `json:"analytics"`
			Features map[string]any `json:"features"`
		} `json:"config"`
		Origins map[string]struct {
			Name struct{ File string } `json:"name"`
		} `json:"origins"`
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.ID != nil && *msg.ID == 2 {
			must(t, json.Unmarshal(msg.Result, &config))
			break
		}
	}
	if config.Origins == nil {
		t.Fatalf("no config/read answer (%v); stderr:\n%s", sc.Err(), stderr.String())
	}
	c := config.Config
	if c.CheckForUpdate || c.Analytics.Enabled || c.Features["plugins"] != false || c.Features["api_key_model_discovery"] != false {
		t.Errorf("phone-home not off: update check %v, analytics %v, features %v", c.CheckForUpdate, c.Analytics.Enabled, c.Features)
	}
	for _, key := range []string{"check_for_update_on_startup", "analytics.enabled", "features.plugins"} {
		if got := config.Origins[key].Name.File; got != "/etc/codex/config.toml" {
			t.Errorf("%s comes from %q, want the image's /etc/codex/config.toml", key, got)
		}
	}
	if strings.Contains(stderr.String(), "could not find bubblewrap") {
		t.Errorf("Codex does not find bwrap on PATH:\n%s", stderr.String())
	}
}
