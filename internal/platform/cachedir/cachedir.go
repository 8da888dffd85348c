// Package cachedir names the project's cache directory, outside the
// repository: HARNESS_CACHE_DIR, or harness-operator under the user's cache
// directory (XDG_CACHE_HOME, else ~/.cache), as the hack/ scripts compute it.
package cachedir

import (
	"os"
	"path/filepath"
)

// Root returns the project's cache directory.
func Root() (string, error) {
	if dir := os.Getenv("HARNESS_CACHE_DIR"); dir != "" {
		return dir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "harness-operator"), nil
}
