package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

type tarEntry struct {
	Name, Link string
	Type       byte
	Mode       int64
	UID, GID   int
	Mtime      int64
	Body       string
}

func readTar(t *testing.T, b []byte) []tarEntry {
	t.Helper()
	var out []tarEntry
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{h.Name, h.Linkname, h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime.Unix(), string(body)})
	}
}

// The digest of a layer is its bytes: the same content added in another
// order, from files with other times and owners, must give the same tar.
func TestLayerTarDependsOnlyOnContent(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "bin")
	if err := os.WriteFile(src, []byte("binary"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(src, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	build := func(reverse bool) []byte {
		t.Helper()
		steps := []func(*tree) error{
			func(tr *tree) error { return tr.file("/etc/passwd", 0o644, []byte("root\n"), "test") },
			func(tr *tree) error { return tr.copyFile("/usr/bin/tool", src, 0o755, "test") },
			func(tr *tree) error { return tr.symlink("/bin", "usr/bin", "test") },
			func(tr *tree) error { return tr.dir("/home/nonroot", 0o700, nonroot, nonroot) },
		}
		tr := newTree()
		for i := range steps {
			step := steps[i]
			if reverse {
				step = steps[len(steps)-1-i]
			}
			if err := step(tr); err != nil {
				t.Fatal(err)
			}
		}
		var b bytes.Buffer
		if err := tr.writeTar(&b, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := build(false), build(true)
	if !bytes.Equal(a, b) {
		t.Fatal("the same content added in another order gave another tar")
	}
	want := []tarEntry{
		{Name: "bin", Link: "usr/bin", Type: tar.TypeSymlink, Mode: 0o777},
		{Name: "etc/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "etc/passwd", Type: tar.TypeReg, Mode: 0o644, Body: "root\n"},
		{Name: "home/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "home/nonroot/", Type: tar.TypeDir, Mode: 0o700, UID: nonroot, GID: nonroot},
		{Name: "usr/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "usr/bin/", Type: tar.TypeDir, Mode: 0o755},
		// The file on disk is 0700 with today's mtime; the layer says 0755 and 1970.
		{Name: "usr/bin/tool", Type: tar.TypeReg, Mode: 0o755, Body: "binary"},
	}
	if got := readTar(t, a); !reflect.DeepEqual(got, want) {
		t.Fatalf("layer entries:\n got %+v\nwant %+v", got, want)
	}
}

// Two packages must not silently shadow each other's files.
func TestLayerRefusesConflictingFilesNamingTheirOrigins(t *testing.T) {
	tr := newTree()
	if err := tr.file("/usr/bin/env", 0o755, []byte("a"), "coreutils:amd64=9.1-1"); err != nil {
		t.Fatal(err)
	}
	if err := tr.file("/usr/bin/env", 0o755, []byte("a"), "coreutils:amd64=9.1-1"); err != nil {
		t.Fatalf("an identical file twice (a merged-/usr duplicate) must be accepted: %v", err)
	}
	err := tr.file("/usr/bin/env", 0o755, []byte("b"), "other:amd64=1")
	if err == nil || !strings.Contains(err.Error(), "other:amd64=1") || !strings.Contains(err.Error(), "coreutils:amd64=9.1-1") {
		t.Fatalf("conflicting /usr/bin/env: got %v, want an error naming both packages", err)
	}
}

func TestSymlinksResolveThroughMergedUsrAndLowerLayers(t *testing.T) {
	lower := newTree()
	must(t, lower.file("/etc/ssl/certs/ca-certificates.crt", 0o644, []byte("pem"), "base"))
	upper := newTree()
	must(t, upper.symlink("/lib64", "usr/lib64", "merged /usr"))
	must(t, upper.file("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", 0o755, []byte("ld"), "libc6"))
	must(t, upper.symlink("/usr/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "libc6"))
	must(t, upper.symlink("/lib", "usr/lib", "merged /usr"))
	must(t, upper.symlink("/etc/ssl/cert.pem", "certs/ca-certificates.crt", "test"))
	must(t, upper.symlink("/usr/bin/missing", "../lib/nothing", "test"))
	must(t, upper.symlink("/usr/bin/loop", "loop", "test"))

	got := upper.danglingSymlinks(lower)
	want := []string{"/usr/bin/loop -> loop", "/usr/bin/missing -> ../lib/nothing"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("dangling symlinks = %q, want %q", got, want)
	}
}

func TestRelativeLinksMovedIntoUsrKeepTheirTarget(t *testing.T) {
	for _, tc := range []struct{ link, target, want string }{
		// /bin/x -> ../usr/bin/y in the package becomes /usr/bin/x -> y.
		{"/usr/bin/x", "/bin/../usr/bin/y", "y"},
		// /lib/a/libz.so -> libz.so.1 stays relative to its directory.
		{"/usr/lib/a/libz.so", "/lib/a/libz.so.1", "libz.so.1"},
		{"/usr/sbin/x", "/bin/y", "../bin/y"},
	} {
		if got := relativeTarget(tc.link, tc.target); got != tc.want {
			t.Errorf("relativeTarget(%q, %q) = %q, want %q", tc.link, tc.target, got, tc.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
