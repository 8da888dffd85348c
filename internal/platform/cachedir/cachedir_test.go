package cachedir

import (
	"path/filepath"
	"testing"
)

func TestRoot(t *testing.T) {
	for _, tc := range []struct {
		name, harness, xdg, home, want string
	}{
		{"HARNESS_CACHE_DIR wins", "/c/h", "/x", "/home/u", "/c/h"},
		{"XDG_CACHE_HOME next", "", "/x", "/home/u", "/x/harness-operator"},
		{"then ~/.cache", "", "", "/home/u", "/home/u/.cache/harness-operator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HARNESS_CACHE_DIR", tc.harness)
			t.Setenv("XDG_CACHE_HOME", tc.xdg)
			t.Setenv("HOME", tc.home)
			got, err := Root()
			if err != nil {
				t.Fatal(err)
			}
			if got != filepath.FromSlash(tc.want) {
				t.Errorf("Root() = %q, want %q", got, tc.want)
			}
		})
	}
}
