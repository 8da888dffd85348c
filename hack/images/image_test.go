package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// buildArchive builds a two-layer image for the given platforms into dir
// with its own layer cache, as `make images` does, and returns the result.
func buildArchive(t *testing.T, dir string, platforms ...v1.Platform) *built {
	t.Helper()
	epoch := time.Unix(0, 0).UTC()
	cache := &layerCache{dir: filepath.Join(dir, "layers"), files: map[v1.Hash]string{}}
	base := newTree()
	must(t, base.file("/etc/passwd", 0o644, []byte(passwd("/sbin/nologin")), "test"))
	bin := newTree()
	must(t, bin.file("/manager", 0o755, []byte("static binary"), "test"))
	b := &built{name: "manager", ref: "harness-operator/manager:0.1.0"}
	for _, p := range platforms {
		var specs []layerSpec
		for _, tr := range []*tree{base, bin} {
			l, err := cache.layer(tr, epoch)
			must(t, err)
			specs = append(specs, layerSpec{l, "test"})
		}
		img, err := newImage(p, specs, staticConfig("manager"), epoch)
		must(t, err)
		b.images = append(b.images, img)
	}
	must(t, b.finish(platforms))
	must(t, b.writeArchive(dir, "0.1.0", epoch, cache.files))
	return b
}

var amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}

// Same inputs, same digests: two builds with separate caches write
// byte-identical archives.
func TestArchiveIsReproducible(t *testing.T) {
	a, b := buildArchive(t, t.TempDir(), amd64), buildArchive(t, t.TempDir(), amd64)
	if a.digest != b.digest {
		t.Fatalf("digests differ: %s and %s", a.digest, b.digest)
	}
	ba, err := os.ReadFile(a.archive)
	must(t, err)
	bb, err := os.ReadFile(b.archive)
	must(t, err)
	if !bytes.Equal(ba, bb) {
		t.Fatal("archives of the same image differ")
	}
}

// `ctr -n k8s.io images import` names the image after
// io.containerd.image.name, and the kubelet looks a Pod's image up by its
// normalised name: the archive must carry that name, be a valid OCI
// layout, and run as nonroot from its entrypoint.
func TestArchiveIsAnOCILayoutNamedForContainerd(t *testing.T) {
	dir := t.TempDir()
	b := buildArchive(t, dir, amd64)
	root := untar(t, b.archive)

	var index v1.IndexManifest
	raw, err := os.ReadFile(filepath.Join(root, "index.json"))
	must(t, err)
	must(t, json.Unmarshal(raw, &index))
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(index.Manifests))
	}
	d := index.Manifests[0]
	if d.Digest != b.digest {
		t.Errorf("index.json points at %s, images.env would say %s", d.Digest, b.digest)
	}
	// A name without a registry is qualified the way the kubelet and
	// containerd's CRI qualify the Pod's image field.
	if got := d.Annotations["io.containerd.image.name"]; got == b.ref || !strings.HasSuffix(got, "/"+b.ref) {
		t.Errorf("io.containerd.image.name = %q, want %s qualified with the registry the kubelet resolves it to", got, b.ref)
	}
	if got := d.Annotations["org.opencontainers.image.ref.name"]; got != "0.1.0" {
		t.Errorf("org.opencontainers.image.ref.name = %q, want the tag", got)
	}

	p, err := layout.FromPath(root)
	must(t, err)
	img, err := p.Image(d.Digest)
	must(t, err)
	if err := validate.Image(img); err != nil {
		t.Fatalf("the archive's image is not valid: %v", err)
	}
	cf, err := img.ConfigFile()
	must(t, err)
	if cf.Config.User != "65532:65532" || len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/manager" {
		t.Errorf("config runs %q as %q, want /manager as 65532:65532", cf.Config.Entrypoint, cf.Config.User)
	}
	if !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("created = %s, want the fixed build time", cf.Created)
	}
}

// A release builds one archive for several platforms: an index whose
// entries name their platform.
func TestMultiPlatformArchiveIsAnIndex(t *testing.T) {
	arm64 := v1.Platform{OS: "linux", Architecture: "arm64"}
	b := buildArchive(t, t.TempDir(), amd64, arm64)
	p, err := layout.FromPath(untar(t, b.archive))
	must(t, err)
	top, err := p.ImageIndex() // index.json, which points at the image's index
	must(t, err)
	idx, err := top.ImageIndex(b.digest)
	must(t, err)
	if err := validate.Index(idx); err != nil {
		t.Fatalf("the archive's index is not valid: %v", err)
	}
	m, err := idx.IndexManifest()
	must(t, err)
	if len(m.Manifests) != 2 || m.Manifests[0].Platform.Architecture != "amd64" || m.Manifests[1].Platform.Architecture != "arm64" {
		t.Fatalf("index manifests = %+v, want amd64 and arm64", m.Manifests)
	}
}

func untar(t *testing.T, file string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(file)
	must(t, err)
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		must(t, err)
		dst := filepath.Join(dir, filepath.Clean("/"+h.Name))
		if h.Typeflag == tar.TypeDir {
			must(t, os.MkdirAll(dst, 0o755))
			continue
		}
		must(t, writeFile(dst, tr, 0o644))
	}
}
