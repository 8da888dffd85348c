package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// debs fetches pinned packages into the cache, each verified against the
// lock before it is used.
type debs struct {
	cacheDir string
}

// path returns the cached, verified .deb of p, downloading it when missing.
func (d debs) path(p debPackage) (string, error) {
	dir := filepath.Join(d.cacheDir, "debs", p.Arch)
	cached := filepath.Join(dir, p.Name+"_"+strings.ReplaceAll(p.Version, ":", "%3a")+"_"+p.Arch+".deb")
	if err := p.verify(cached); err == nil {
		return cached, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		logf("%v; downloading it again", err)
	}
	a, err := newApt(d.cacheDir, p.Arch)
	if err != nil {
		return "", err
	}
	if !a.hasLists() {
		if err := a.update(); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	stage, err := os.MkdirTemp(dir, ".download-*")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(stage) }()
	logf("downloading %s", p)
	got, err := a.download(p, stage)
	if err != nil {
		// The private index may predate the lock: refresh it once.
		if uerr := a.update(); uerr != nil {
			return "", errors.Join(err, uerr)
		}
		if got, err = a.download(p, stage); err != nil {
			return "", fmt.Errorf("%w\n(is %s still in the configured Debian sources? `make images-lock` pins the current versions)", err, p)
		}
	}
	if err := p.verify(got); err != nil {
		return "", err
	}
	return cached, os.Rename(got, cached)
}

// debContent is what a package contributes to an image: its files, and its
// control stanza for /var/lib/dpkg/status.d (what image scanners read to
// know the Debian packages inside, as distroless images do).
type debContent struct {
	pkg     debPackage
	files   []debFile
	control []byte
}

type debFile struct {
	path   string // absolute, as in the package
	kind   entryKind
	mode   int64
	data   []byte
	target string
}

// readDeb reads a .deb's data and control through dpkg-deb (whose
// decompressors cover every format Debian uses).
func readDeb(p debPackage, file string) (*debContent, error) {
	control, err := exec.Command("dpkg-deb", "--field", file).Output()
	if err != nil {
		return nil, fmt.Errorf("%s: dpkg-deb --field %s: %w", p, file, err)
	}
	fsys, err := exec.Command("dpkg-deb", "--fsys-tarfile", file).Output()
	if err != nil {
		return nil, fmt.Errorf("%s: dpkg-deb --fsys-tarfile %s: %w", p, file, err)
	}
	c := &debContent{pkg: p, control: control}
	regular := map[string][]byte{} // path → content, for hard links
	tr := tar.NewReader(bytes.NewReader(fsys))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read data: %w", p, err)
		}
		f := debFile{path: path.Clean("/" + h.Name), mode: h.Mode & 0o7777}
		switch h.Typeflag {
		case tar.TypeDir:
			f.kind = kindDir
		case tar.TypeSymlink:
			f.kind, f.target = kindSymlink, h.Linkname
		case tar.TypeReg:
			f.kind = kindFile
			if f.data, err = io.ReadAll(tr); err != nil {
				return nil, fmt.Errorf("%s: read %s: %w", p, h.Name, err)
			}
		case tar.TypeLink:
			// A hard link becomes a copy: layers stay plain and the content is the same.
			data, ok := regular[path.Clean("/"+h.Linkname)]
			if !ok {
				return nil, fmt.Errorf("%s: hard link %s to %s, which comes later or not at all", p, h.Name, h.Linkname)
			}
			f.kind, f.data = kindFile, data
		default:
			return nil, fmt.Errorf("%s: %s has tar type %q, which images do not carry", p, h.Name, h.Typeflag)
		}
		if f.kind == kindFile {
			regular[f.path] = f.data
		}
		c.files = append(c.files, f)
	}
	return c, nil
}

// certificates concatenates the package's CA certificates in path order:
// what update-ca-certificates writes to /etc/ssl/certs/ca-certificates.crt
// with every certificate enabled, the default.
func (c *debContent) certificates() ([]byte, error) {
	var crts []debFile
	for _, f := range c.files {
		if f.kind == kindFile && strings.HasPrefix(f.path, "/usr/share/ca-certificates/") && strings.HasSuffix(f.path, ".crt") {
			crts = append(crts, f)
		}
	}
	if len(crts) == 0 {
		return nil, fmt.Errorf("%s: no /usr/share/ca-certificates/**/*.crt", c.pkg)
	}
	sort.Slice(crts, func(i, j int) bool { return crts[i].path < crts[j].path })
	var b bytes.Buffer
	for _, f := range crts {
		b.Write(f.data)
		if !bytes.HasSuffix(f.data, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

// droppedPrefixes are documentation and translations, which nothing in a
// container reads; each package's copyright file is kept.
var droppedPrefixes = []string{
	"/usr/share/doc/", "/usr/share/man/", "/usr/share/info/", "/usr/share/locale/",
	"/usr/share/lintian/", "/usr/share/bug/", "/usr/share/doc-base/", "/usr/share/bash-completion/",
	"/usr/share/menu/",
}

func dropped(p string) bool {
	if strings.HasPrefix(p, "/usr/share/doc/") && path.Base(p) == "copyright" {
		return false
	}
	for _, prefix := range droppedPrefixes {
		if strings.HasPrefix(p+"/", prefix) {
			return true
		}
	}
	return false
}

// mergedUsr maps /bin, /sbin and /lib* into /usr, as every Debian system
// since bookworm is laid out; the image has the top-level links.
func mergedUsr(p string) string {
	for _, top := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if p == top || strings.HasPrefix(p, top+"/") {
			return "/usr" + p
		}
	}
	return p
}

var mergedUsrLinks = map[string]string{"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib", "/lib64": "usr/lib64"}

// install adds the package's files to t (merged /usr, without documentation)
// and its control stanza under /var/lib/dpkg/status.d.
func (c *debContent) install(t *tree) error {
	origin := c.pkg.String()
	for _, f := range c.files {
		p := mergedUsr(f.path)
		if dropped(p) || p == "/" {
			continue
		}
		target := f.target
		if f.kind == kindSymlink && !path.IsAbs(target) && p != f.path {
			// A relative link moved one level down keeps pointing at the same file.
			target = relativeTarget(p, path.Join(path.Dir(f.path), target))
		}
		var err error
		switch f.kind {
		case kindDir:
			err = t.dir(p, f.mode, 0, 0)
		case kindFile:
			err = t.add(p, &entry{kind: kindFile, mode: f.mode, data: f.data, origin: origin})
		case kindSymlink:
			err = t.symlink(p, target, origin)
		}
		if err != nil {
			return err
		}
	}
	return t.file("/var/lib/dpkg/status.d/"+c.pkg.Name, 0o644, c.control, origin)
}

// relativeTarget is the relative link from the directory of link to the
// absolute (pre-merge) target, mapped into /usr.
func relativeTarget(link, target string) string {
	rel, err := filepath.Rel(path.Dir(link), mergedUsr(path.Clean(target)))
	if err != nil {
		return target
	}
	return filepath.ToSlash(rel)
}
