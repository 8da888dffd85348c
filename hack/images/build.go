package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const certFile = "/etc/ssl/certs/ca-certificates.crt"

// runEnv is the environment every image starts with.
var runEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + certFile}

var runUser = fmt.Sprintf("%d:%d", nonroot, nonroot)

// build builds every requested image for every platform and writes the
// archives and images.env.
func build(o *options) error {
	start := time.Now()
	l, err := readLock(o.lockFile)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return err
	}
	cache := &layerCache{dir: filepath.Join(o.cacheDir, "layers"), files: map[v1.Hash]string{}}
	results := make([]*built, len(o.images))
	for i, name := range o.images {
		results[i] = &built{name: name, ref: o.repository + "/" + name + ":" + o.tag}
	}
	for _, p := range o.platforms {
		imgs, err := buildPlatform(o, l, cache, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for i, name := range o.images {
			results[i].images = append(results[i].images, imgs[name])
		}
	}
	var env strings.Builder
	for _, b := range results {
		if err := b.finish(o.platforms); err != nil {
			return err
		}
		if err := b.writeArchive(o.outDir, o.tag, o.sourceEpoch, cache.files); err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		if o.push != "" {
			if b.ref, err = b.push(o.push + "/" + b.name + ":" + o.tag); err != nil {
				return err
			}
		}
		key := strings.ToUpper(strings.ReplaceAll(b.name, "-", "_"))
		fmt.Fprintf(&env, "%s_IMAGE=%s\n%s_DIGEST=%s\n", key, b.ref, key, b.digest)
		fi, err := os.Stat(b.archive)
		if err != nil {
			return err
		}
		logf("%-17s %s  %6.1f MB  %s", b.name, b.digest, float64(fi.Size())/1e6, b.archive)
	}
	if err := os.WriteFile(filepath.Join(o.outDir, "images.env"), []byte(env.String()), 0o644); err != nil {
		return err
	}
	logf("wrote %s in %s", filepath.Join(o.outDir, "images.env"), time.Since(start).Round(100*time.Millisecond))
	return nil
}

// buildPlatform builds the requested images for one platform.
func buildPlatform(o *options, l lock, cache *layerCache, p v1.Platform) (map[string]v1.Image, error) {
	pkgs, err := l.forArch(p.Architecture)
	if err != nil {
		return nil, err
	}
	d := debs{cacheDir: o.cacheDir}
	certs, err := loadDebs(d, pkgs, func(name string) bool { return name == certPackage })
	if err != nil {
		return nil, err
	}
	if len(certs) != 1 {
		return nil, fmt.Errorf("images/debian.lock pins no %s for %s", certPackage, p.Architecture)
	}
	baseT, err := baseTree(certs[0])
	if err != nil {
		return nil, err
	}
	base, err := cache.layer(baseT, o.sourceEpoch)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	baseSpec := layerSpec{base, "base: " + certPackage + " " + certs[0].pkg.Version + ", users, directories"}

	binDir, err := os.MkdirTemp(o.cacheDir, "bin-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(binDir) }()
	var goNames []string
	for _, name := range o.images {
		if _, ok := goBinaries[name]; ok {
			goNames = append(goNames, name)
		}
	}
	if err := goBuild(binDir, p.Architecture, goNames); err != nil {
		return nil, err
	}

	out := map[string]v1.Image{}
	for _, name := range goNames {
		bt, err := binaryTree(binDir, name)
		if err != nil {
			return nil, err
		}
		bin, err := cache.layer(bt, o.sourceEpoch)
		if err != nil {
			return nil, err
		}
		if out[name], err = newImage(p, []layerSpec{baseSpec, {bin, "go build " + goBinaries[name]}}, staticConfig(name), o.sourceEpoch); err != nil {
			return nil, err
		}
	}
	if slices.Contains(o.images, "codex-app-server") {
		img, err := codexImage(o, pkgs, d, cache, p, baseSpec, baseT)
		if err != nil {
			return nil, fmt.Errorf("codex-app-server: %w", err)
		}
		out["codex-app-server"] = img
	}
	return out, nil
}

func staticConfig(name string) v1.Config {
	cfg := v1.Config{User: runUser, Entrypoint: []string{"/" + name}, Env: runEnv, WorkingDir: "/"}
	if name == "stubmodel" {
		cfg.ExposedPorts = map[string]struct{}{"8080/tcp": {}}
	}
	return cfg
}

func codexImage(o *options, pkgs lock, d debs, cache *layerCache, p v1.Platform, base layerSpec, baseT *tree) (v1.Image, error) {
	userPkgs, err := loadDebs(d, pkgs, func(name string) bool { return name != certPackage })
	if err != nil {
		return nil, err
	}
	userT, err := userlandTree(userPkgs)
	if err != nil {
		return nil, err
	}
	vendor, version, err := codexVendor(o.cacheDir, p.Architecture, o.codexVer)
	if err != nil {
		return nil, err
	}
	codexT, err := codexTree(vendor)
	if err != nil {
		return nil, err
	}
	configT, err := codexConfigTree()
	if err != nil {
		return nil, err
	}
	// A broken link (a library moved by the merged /usr) fails here, not in a Pod.
	if bad := codexT.danglingSymlinks(userT, baseT); len(bad) > 0 {
		return nil, fmt.Errorf("dangling symlinks in the Codex tree: %s", strings.Join(bad, ", "))
	}
	if bad := userT.danglingSymlinks(baseT); len(bad) > 0 {
		return nil, fmt.Errorf("dangling symlinks in the userland: %s", strings.Join(bad, ", "))
	}
	var names []string
	for _, c := range userPkgs {
		names = append(names, c.pkg.Name+" "+c.pkg.Version)
	}
	sort.Strings(names)
	specs := []layerSpec{base}
	for _, s := range []struct {
		t  *tree
		by string
	}{
		{userT, "userland: " + strings.Join(names, ", ")},
		{codexT, "@openai/codex " + version + " native tree in " + codexDir},
		{configT, "/etc/codex/config.toml"},
	} {
		l, err := cache.layer(s.t, o.sourceEpoch)
		if err != nil {
			return nil, err
		}
		specs = append(specs, layerSpec{l, s.by})
	}
	cfg := v1.Config{
		User:       runUser,
		Entrypoint: []string{"/usr/local/bin/codex"},
		Cmd:        []string{"app-server"},
		Env:        append(append([]string(nil), runEnv...), "SHELL=/bin/bash"),
		WorkingDir: "/",
	}
	return newImage(p, specs, cfg, o.sourceEpoch)
}

// loadDebs fetches (from the cache, or apt) and reads the lock's packages
// that keep selects, in lock order.
func loadDebs(d debs, pkgs lock, keep func(name string) bool) ([]*debContent, error) {
	var out []*debContent
	for _, p := range pkgs {
		if !keep(p.Name) {
			continue
		}
		file, err := d.path(p)
		if err != nil {
			return nil, err
		}
		c, err := readDeb(p, file)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}
