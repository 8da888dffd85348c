package main

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// tree is the content of one image layer: paths (absolute, clean) to
// entries. It is written as a tar whose bytes depend only on the content:
// entries sorted by path, one fixed mtime, numeric owners and no names.
type tree struct {
	entries map[string]*entry
}

type entryKind int

const (
	kindDir entryKind = iota
	kindFile
	kindSymlink
)

type entry struct {
	kind     entryKind
	mode     int64 // permission bits, including setuid/setgid/sticky
	uid, gid int
	target   string // symlink target
	data     []byte // file content held in memory, or
	source   string // a file on disk to copy the content from
	size     int64  // of source
	origin   string // where the entry came from, for conflict errors
}

func newTree() *tree { return &tree{entries: map[string]*entry{}} }

// dir adds a directory and its missing parents (0755, root).
func (t *tree) dir(p string, mode int64, uid, gid int) error {
	p = path.Clean("/" + p)
	if p == "/" {
		return nil
	}
	if err := t.parents(p); err != nil {
		return err
	}
	if e, ok := t.entries[p]; ok {
		if e.kind != kindDir {
			return fmt.Errorf("%s: a directory conflicts with a %s from %s", p, e.kind, e.origin)
		}
		e.mode, e.uid, e.gid = mode, uid, gid
		return nil
	}
	t.entries[p] = &entry{kind: kindDir, mode: mode, uid: uid, gid: gid, origin: "dir"}
	return nil
}

func (t *tree) parents(p string) error {
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		e, ok := t.entries[d]
		if !ok {
			t.entries[d] = &entry{kind: kindDir, mode: 0o755, origin: "parent of " + p}
			continue
		}
		if e.kind != kindDir {
			return fmt.Errorf("%s: parent %s is a %s from %s", p, d, e.kind, e.origin)
		}
	}
	return nil
}

// add adds a file or symlink. Adding the same path twice is an error unless
// both are identical, so that two packages cannot silently shadow each other.
func (t *tree) add(p string, e *entry) error {
	p = path.Clean("/" + p)
	if err := t.parents(p); err != nil {
		return err
	}
	if old, ok := t.entries[p]; ok && !sameEntry(old, e) {
		return fmt.Errorf("%s from %s conflicts with the %s from %s", p, e.origin, old.kind, old.origin)
	}
	t.entries[p] = e
	return nil
}

// replace adds a file or symlink that deliberately overrides what is there
// (an image's own /etc/passwd over the base's, in a later layer).
func (t *tree) replace(p string, e *entry) error {
	delete(t.entries, path.Clean("/"+p))
	return t.add(p, e)
}

func (t *tree) file(p string, mode int64, data []byte, origin string) error {
	return t.add(p, &entry{kind: kindFile, mode: mode, data: data, origin: origin})
}

func (t *tree) symlink(p, target, origin string) error {
	return t.add(p, &entry{kind: kindSymlink, mode: 0o777, target: target, origin: origin})
}

// copyFile adds a file whose content is read from disk when the tar is written.
func (t *tree) copyFile(p, source string, mode int64, origin string) error {
	fi, err := os.Stat(source)
	if err != nil {
		return err
	}
	return t.add(p, &entry{kind: kindFile, mode: mode, source: source, size: fi.Size(), origin: origin})
}

func sameEntry(a, b *entry) bool {
	if a.kind != b.kind || a.mode != b.mode || a.target != b.target || a.uid != b.uid || a.gid != b.gid {
		return false
	}
	return a.kind != kindFile || (a.source == b.source && string(a.data) == string(b.data))
}

func (k entryKind) String() string {
	return [...]string{"directory", "file", "symlink"}[k]
}

// writeTar writes the tree as a tar with every mtime set to mtime.
func (t *tree) writeTar(w io.Writer, mtime time.Time) error {
	paths := make([]string, 0, len(t.entries))
	for p := range t.entries {
		paths = append(paths, p)
	}
	// Sorting the full paths puts every directory before its content.
	sort.Strings(paths)
	tw := tar.NewWriter(w)
	for _, p := range paths {
		e := t.entries[p]
		h := &tar.Header{
			Name:    strings.TrimPrefix(p, "/"),
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		switch e.kind {
		case kindDir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case kindSymlink:
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.target
		case kindFile:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
			if e.source != "" {
				h.Size = e.size
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("tar %s: %w", p, err)
		}
		if err := t.writeContent(tw, p, e); err != nil {
			return err
		}
	}
	return tw.Close()
}

func (t *tree) writeContent(w io.Writer, p string, e *entry) error {
	if e.kind != kindFile {
		return nil
	}
	if e.source == "" {
		_, err := w.Write(e.data)
		return err
	}
	f, err := os.Open(e.source)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	n, err := io.Copy(w, f)
	if err != nil {
		return fmt.Errorf("tar %s from %s: %w", p, e.source, err)
	}
	if n != e.size {
		return fmt.Errorf("tar %s: %s changed size while building (%d, then %d bytes)", p, e.source, e.size, n)
	}
	return nil
}

// danglingSymlinks lists the symlinks whose target is not in the tree (nor
// in below, the layers under this one), so that a broken userland fails the
// build instead of a command in a Pod.
func (t *tree) danglingSymlinks(below ...*tree) []string {
	var bad []string
	for p, e := range t.entries {
		if e.kind != kindSymlink {
			continue
		}
		if _, ok := resolve(p, append([]*tree{t}, below...)); !ok {
			bad = append(bad, p+" -> "+e.target)
		}
	}
	sort.Strings(bad)
	return bad
}

// resolve follows symlinks through the union of the trees (the first tree
// wins) the way the kernel does, and reports the final entry.
func resolve(p string, trees []*tree) (*entry, bool) {
	lookup := func(q string) (*entry, bool) {
		for _, t := range trees {
			if e, ok := t.entries[q]; ok {
				return e, true
			}
		}
		return nil, q == "/"
	}
	for hops := 0; hops < 40; hops++ {
		// Resolve the parents first: /bin/bash is /usr/bin/bash when /bin is a link.
		cur := "/"
		parts := strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/")
		restarted := false
		for i, part := range parts {
			next := path.Join(cur, part)
			e, ok := lookup(next)
			if !ok {
				return nil, false
			}
			if e.kind == kindSymlink {
				target := e.target
				if !path.IsAbs(target) {
					target = path.Join(cur, target)
				}
				p = path.Join(append([]string{target}, parts[i+1:]...)...)
				restarted = true
				break
			}
			cur = next
		}
		if !restarted {
			e, ok := lookup(cur)
			return e, ok
		}
	}
	return nil, false
}
