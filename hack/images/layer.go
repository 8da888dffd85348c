package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/gzip"
)

// fileLayer is a gzip-compressed layer blob on disk with its digests.
type fileLayer struct {
	path   string
	digest v1.Hash // of the compressed blob
	diffID v1.Hash // of the uncompressed tar
	size   int64
}

var _ v1.Layer = (*fileLayer)(nil)

func (l *fileLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *fileLayer) DiffID() (v1.Hash, error)            { return l.diffID, nil }
func (l *fileLayer) Size() (int64, error)                { return l.size, nil }
func (l *fileLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *fileLayer) Compressed() (io.ReadCloser, error)  { return os.Open(l.path) }

func (l *fileLayer) Uncompressed() (io.ReadCloser, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(f)
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{zr, f}, nil
}

// layerCache keeps compressed layers by the digest of their tar, so a warm
// build only writes and hashes the tar and skips the compression (most of a
// layer's cost for the 400 MB Codex tree). The key includes the compressor's
// identity: a new compressor makes new blobs, never a mix of old and new.
type layerCache struct {
	dir   string
	files map[v1.Hash]string // digest → blob, of the layers made by this run
}

// compressorID names the code that turns a tar into a blob.
var compressorID = func() string {
	id := runtime.Version() + " gzip level 6"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/klauspost/compress" {
				id += " " + d.Path + "@" + d.Version
			}
		}
	}
	return id
}()

// layer writes t as a tar, compresses it (or reuses the cached blob) and
// returns the layer.
func (c *layerCache) layer(t *tree, mtime time.Time) (*fileLayer, error) {
	l, err := c.build(t, mtime)
	if err != nil {
		return nil, err
	}
	c.files[l.digest] = l.path
	return l, nil
}

func (c *layerCache) build(t *tree, mtime time.Time) (*fileLayer, error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	raw, err := os.CreateTemp(c.dir, ".tar-*")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(raw.Name()); _ = raw.Close() }()
	tarHash := sha256.New()
	if err := t.writeTar(io.MultiWriter(raw, tarHash), mtime); err != nil {
		return nil, err
	}
	diffID := v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(tarHash.Sum(nil))}
	key := sha256.Sum256([]byte(diffID.String() + "\n" + compressorID))
	blob := filepath.Join(c.dir, hex.EncodeToString(key[:])+".tar.gz")
	if l, err := cachedLayer(blob, diffID); err == nil {
		return l, nil
	}
	if _, err := raw.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return compress(raw, blob, diffID)
}

func compress(src io.Reader, blob string, diffID v1.Hash) (*fileLayer, error) {
	out, err := os.CreateTemp(filepath.Dir(blob), ".gz-*")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(out.Name()); _ = out.Close() }()
	blobHash := sha256.New()
	counter := &countingWriter{w: io.MultiWriter(out, blobHash)}
	// The gzip header carries no name and no mtime: the blob depends only on the tar.
	zw, err := gzip.NewWriterLevel(counter, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(zw, src); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(out.Name(), blob); err != nil {
		return nil, err
	}
	return &fileLayer{path: blob, digest: hashOf(blobHash), diffID: diffID, size: counter.n}, nil
}

// cachedLayer re-reads a cached blob and checks it still decompresses to the
// tar it was stored for; a damaged cache entry is rebuilt, never shipped.
func cachedLayer(blob string, diffID v1.Hash) (*fileLayer, error) {
	f, err := os.Open(blob)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	blobHash, tarHash := sha256.New(), sha256.New()
	counter := &countingWriter{w: blobHash}
	zr, err := gzip.NewReader(io.TeeReader(f, counter))
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(tarHash, zr); err != nil {
		return nil, err
	}
	if _, err := io.Copy(counter, f); err != nil { // anything after the gzip stream
		return nil, err
	}
	if got := hashOf(tarHash); got != diffID {
		return nil, fmt.Errorf("cached layer %s holds %s, want %s", blob, got, diffID)
	}
	return &fileLayer{path: blob, digest: hashOf(blobHash), diffID: diffID, size: counter.n}, nil
}

func hashOf(h hash.Hash) v1.Hash {
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
