// Command images is `make images`: it builds the project's container images
// as OCI image archives with no container engine and no registry, from the
// Go sources, Debian's packages pinned in images/debian.lock, and the pinned
// Codex release (docs/images.md):
//
//	pause             the containerd sandbox image of the local node
//	manager           /manager        (./cmd/manager)
//	dispatcher        /dispatcher     (./cmd/dispatcher)
//	stubmodel         /stubmodel      (./internal/testutil/stubmodel/cmd/stubmodel)
//	codex-app-server  codex app-server with bash and a minimal userland
//
// Every image starts from one base layer built from Debian's packages; the
// same base is built for local use and for releases. The output is
// reproducible: the same inputs give the same digests.
//
// It writes $IMAGES_DIR/<name>.tar and $IMAGES_DIR/images.env
// (<NAME>_IMAGE=<ref> and <NAME>_DIGEST=sha256:…). With -update-lock it
// regenerates images/debian.lock from the configured Debian sources instead.
// With -push it also pushes each image to <prefix>/<name>:<tag> (the release
// workflow).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/internal/platform/cachedir"
)

// imageNames is every image, in build order.
var imageNames = []string{"pause", "manager", "dispatcher", "stubmodel", "codex-app-server"}

type options struct {
	images      []string
	platforms   []v1.Platform
	outDir      string
	repository  string
	tag         string
	lockFile    string
	cacheDir    string
	codexVer    string
	push        string
	updateLock  bool
	sourceEpoch time.Time
}

func main() {
	o, err := parseFlags()
	if err == nil {
		if o.updateLock {
			err = updateLock(o)
		} else {
			err = build(o)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "images: "+format+"\n", args...) }

func parseFlags() (*options, error) {
	images := flag.String("images", strings.Join(imageNames, ","), "Comma-separated images to build.")
	platforms := flag.String("platforms", "linux/amd64", "Comma-separated platforms; more than one makes each archive a multi-platform index.")
	outDir := flag.String("out", envOr("IMAGES_DIR", ".local/images"), "Directory of the archives and images.env ($IMAGES_DIR).")
	repository := flag.String("repository", envOr("IMAGE_REPOSITORY", "localhost/harness-operator"), "Repository prefix of the image names ($IMAGE_REPOSITORY; localhost/: built here, never pulled).")
	tag := flag.String("tag", os.Getenv("IMAGE_TAG"), "Image tag ($IMAGE_TAG; default the chart's appVersion).")
	lockFile := flag.String("lock", "images/debian.lock", "The Debian package lock.")
	codexVer := flag.String("codex-version", os.Getenv("CODEX_VERSION"), "Codex release (default hack/setup-codex.sh's pin).")
	push := flag.String("push", "", "Also push every image to <prefix>/<name>:<tag> with the default keychain (release workflow).")
	updateLock := flag.Bool("update-lock", false, "Regenerate the lock from the configured Debian sources for -platforms, then exit.")
	flag.Parse()

	o := &options{outDir: *outDir, repository: *repository, tag: *tag, lockFile: *lockFile, codexVer: *codexVer, push: *push, updateLock: *updateLock}
	for _, name := range strings.Split(*images, ",") {
		if !slices.Contains(imageNames, name) {
			return nil, fmt.Errorf("-images: unknown image %q (images: %s)", name, strings.Join(imageNames, ", "))
		}
		o.images = append(o.images, name)
	}
	for _, s := range strings.Split(*platforms, ",") {
		p, err := v1.ParsePlatform(s)
		if err != nil || p.OS != "linux" || p.Architecture == "" {
			return nil, fmt.Errorf("-platforms: %q is not linux/<arch>", s)
		}
		o.platforms = append(o.platforms, *p)
	}
	if o.tag == "" {
		var err error
		if o.tag, err = chartAppVersion("charts/harness-operator/Chart.yaml"); err != nil {
			return nil, err
		}
	}
	cache, err := cachedir.Root()
	if err != nil {
		return nil, err
	}
	o.cacheDir = filepath.Join(cache, "images")
	// Every file time and the images' creation time: 1970, or the release's
	// SOURCE_DATE_EPOCH (reproducible-builds.org), never the clock.
	o.sourceEpoch = time.Unix(0, 0).UTC()
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		sec, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", s)
		}
		o.sourceEpoch = time.Unix(sec, 0).UTC()
	}
	return o, nil
}

func (o *options) hasArch(arch string) bool {
	return slices.ContainsFunc(o.platforms, func(p v1.Platform) bool { return p.Architecture == arch })
}

func chartAppVersion(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("default tag: %w", err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		return "", fmt.Errorf("default tag: %s: %w", file, err)
	}
	if chart.AppVersion == "" {
		return "", fmt.Errorf("default tag: no appVersion in %s", file)
	}
	return chart.AppVersion, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// updateLock pins the current candidates of every platform's architecture;
// the lock's entries for other architectures stay.
func updateLock(o *options) error {
	var all lock
	if old, err := readLock(o.lockFile); err == nil {
		for _, pkg := range old {
			if !o.hasArch(pkg.Arch) {
				all = append(all, pkg)
			}
		}
	}
	for _, p := range o.platforms {
		a, err := newApt(o.cacheDir, p.Architecture)
		if err != nil {
			return err
		}
		if err := a.update(); err != nil {
			return err
		}
		l, err := a.resolveLock()
		if err != nil {
			return err
		}
		all = append(all, l...)
	}
	if err := os.WriteFile(o.lockFile, []byte(all.format()), 0o644); err != nil {
		return err
	}
	logf("wrote %s (%d packages)", o.lockFile, len(all))
	return nil
}
