package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/distribution/reference"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// layerSpec is one layer of an image and what the history says made it.
type layerSpec struct {
	layer     *fileLayer
	createdBy string
}

// newImage assembles an OCI image from its layers and run settings. The
// config's times are the fixed build time, so the digest depends only on
// the content.
func newImage(platform v1.Platform, layers []layerSpec, cfg v1.Config, created time.Time) (v1.Image, error) {
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, l := range layers {
		var err error
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:   l.layer,
			History: v1.History{Created: v1.Time{Time: created}, CreatedBy: l.createdBy, Comment: "hack/images"},
		})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Variant = platform.Architecture, platform.OS, platform.Variant
	cf.Created = v1.Time{Time: created}
	cf.Config = cfg
	return mutate.ConfigFile(img, cf)
}

// built is one image for all requested platforms.
type built struct {
	name    string
	ref     string // repository:tag
	images  []v1.Image
	index   v1.ImageIndex // set when there is more than one platform
	digest  v1.Hash       // of the manifest, or of the index
	archive string
}

func (b *built) finish(platforms []v1.Platform) error {
	if len(b.images) == 1 {
		d, err := b.images[0].Digest()
		b.digest = d
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for i, img := range b.images {
		p := platforms[i]
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	b.index = idx
	d, err := idx.Digest()
	b.digest = d
	return err
}

// writeArchive writes b as an OCI image layout tar that `ctr images import`
// (and skopeo, podman, crane) load. index.json names the image twice:
// io.containerd.image.name is the fully qualified name containerd's CRI
// resolves the Pod's image field to (a name without a registry is
// normalised the way the kubelet and containerd do it), and
// org.opencontainers.image.ref.name is the tag.
// files maps each layer's digest to its blob on disk.
func (b *built) writeArchive(dir, tag string, mtime time.Time, files map[v1.Hash]string) error {
	named, err := reference.ParseNormalizedNamed(b.ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", b.ref, err)
	}
	t := newTree()
	add := func(mt types.MediaType, raw []byte) (v1.Descriptor, error) {
		h, _, err := v1.SHA256(bytes.NewReader(raw))
		if err != nil {
			return v1.Descriptor{}, err
		}
		return v1.Descriptor{MediaType: mt, Digest: h, Size: int64(len(raw))}, addBlob(t, h, raw)
	}
	for _, img := range b.images {
		if err := addImageBlobs(t, img, files, add); err != nil {
			return err
		}
	}
	var top v1.Descriptor
	if b.index != nil {
		raw, err := b.index.RawManifest()
		if err != nil {
			return err
		}
		if top, err = add(types.OCIImageIndex, raw); err != nil {
			return err
		}
	} else {
		raw, err := b.images[0].RawManifest()
		if err != nil {
			return err
		}
		if top, err = add(types.OCIManifestSchema1, raw); err != nil {
			return err
		}
		cf, err := b.images[0].ConfigFile()
		if err != nil {
			return err
		}
		top.Platform = cf.Platform()
	}
	top.Annotations = map[string]string{
		"io.containerd.image.name":          named.String(),
		"org.opencontainers.image.ref.name": tag,
	}
	index, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{top}})
	if err != nil {
		return err
	}
	if err := errors.Join(
		t.file("/oci-layout", 0o644, []byte(`{"imageLayoutVersion":"1.0.0"}`), "layout"),
		t.file("/index.json", 0o644, index, "layout"),
	); err != nil {
		return err
	}
	b.archive = filepath.Join(dir, b.name+".tar")
	return writeTarFile(t, b.archive, mtime)
}

func addImageBlobs(t *tree, img v1.Image, files map[v1.Hash]string, add func(types.MediaType, []byte) (v1.Descriptor, error)) error {
	raw, err := img.RawManifest()
	if err != nil {
		return err
	}
	if _, err := add(types.OCIManifestSchema1, raw); err != nil {
		return err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	if _, err := add(types.OCIConfigJSON, cfg); err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		file, ok := files[d]
		if !ok {
			return fmt.Errorf("layer %s was not built by this run", d)
		}
		if err := t.copyFile(blobPath(d), file, 0o644, "layer"); err != nil {
			return err
		}
	}
	return nil
}

func blobPath(h v1.Hash) string { return "/blobs/" + h.Algorithm + "/" + h.Hex }

// addBlob adds a blob; the same blob twice (a layer two platforms share) is one entry.
func addBlob(t *tree, h v1.Hash, raw []byte) error {
	return t.file(blobPath(h), 0o644, raw, "blob")
}

func writeTarFile(t *tree, file string, mtime time.Time) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+"-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()); _ = tmp.Close() }()
	if err := t.writeTar(tmp, mtime); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// Readable by whoever imports it (CreateTemp makes 0600).
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
