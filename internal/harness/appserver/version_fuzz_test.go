package appserver_test

import (
	"errors"
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// FuzzUserAgentVersion: whatever userAgent an app-server sends, reading its
// version never panics; a version read and rendered back into a userAgent
// reads as the same version; and CheckVersion admits exactly the versions
// at or above the floor, refusing everything else with a *VersionError that
// names the version it detected.
func FuzzUserAgentVersion(f *testing.F) {
	for _, seed := range [][2]string{
		{"codex_cli_rs/0.169.0 (Debian 12.0.0; x86_64) xterm (x; 1)", ""},
		{"harness-operator/0.149.0", ""},
		{"h/0.149.0-alpha.1 (Linux)", ""},
		{"h/1.2.3+build.7 (x)", "0.150.0"},
		{"h/1.2.3-rc.1+meta", "1.2.3"},
		{"h/01.2.3 (x)", ""},
		{"h/1.2.3-01", ""},
		{"h/99999999999999999999.0.0", ""},
		{"", ""}, {"no version", "x"}, {"a/b/1.2.3", ""}, {"h/1.2.3\t(x)", "0.149.0-rc.1"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, userAgent, minVersion string) {
		raw, ok := appserver.ParseUserAgentVersion(userAgent)
		if !ok && raw != "" {
			t.Fatalf("no version, yet %q", raw)
		}
		var v *semver.Version
		if ok {
			var err error
			if v, err = semver.StrictNewVersion(raw); err == nil {
				again, ok := appserver.ParseUserAgentVersion("h/" + v.String() + " (Linux; x86_64)")
				if !ok || again != v.String() {
					t.Fatalf("%q read as %s, rendered back read as %q (%v)", userAgent, v, again, ok)
				}
			} else {
				v = nil
			}
		}

		got, err := appserver.CheckVersion(userAgent, minVersion)
		floor, floorErr := appserver.Floor(minVersion)
		var verr *appserver.VersionError
		switch {
		case floorErr != nil:
			if err == nil || errors.As(err, &verr) {
				t.Fatalf("invalid minVersion %q: CheckVersion said %v", minVersion, err)
			}
		case v == nil:
			if !errors.As(err, &verr) || verr.Detected != "" || got != nil {
				t.Fatalf("no version in %q: CheckVersion said %v, %v", userAgent, got, err)
			}
		case v.LessThan(floor):
			if !errors.As(err, &verr) || verr.Detected != v.String() || verr.Floor != floor.String() {
				t.Fatalf("%s below the floor %s: CheckVersion said %v", v, floor, err)
			}
		default:
			if err != nil || got == nil || got.String() != v.String() {
				t.Fatalf("%s at or above the floor %s: CheckVersion said %v, %v", v, floor, got, err)
			}
		}
	})
}
