package appserver_test

import (
	"errors"
	"testing"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

func TestParseUserAgentVersion(t *testing.T) {
	t.Parallel()
	cases := []struct {
		ua   string
		want string // "" = no version
	}{
		{"harness-operator/0.169.0 (Debian 12.0.0; x86_64) xterm (harness-operator; 0.0.0)", "0.169.0"},
		{"openclaw/0.169.0 (Debian 12.0.0; x86_64) xterm (openclaw; 2026.5.1)", "0.169.0"},
		{"timing/0.169.0 (Debian 12.0.0; x86_64) unknown (timing; 1)", "0.169.0"},
		{"x/0.149.0-alpha.1 (Linux)", "0.149.0-alpha.1"},
		{"x/1.2.3+build.7 (Linux)", "1.2.3+build.7"},
		{"x/1.2.3-rc.1+build.7(Linux)", "1.2.3-rc.1+build.7"},
		{"x/1.2.3", "1.2.3"},
		{"x/1.2.3\tmore", "1.2.3"},
		{"Open Claw/0.169.0 (Debian)", "0.169.0"},
		// A clientInfo.name with "/" pushes the version out of place.
		{"Open Claw/ä/0.169.0 (Debian 12.0.0; x86_64) xterm (Open Claw/ä; 2026.5.1 beta)", ""},
		{"", ""},
		{"codex-cli 0.169.0", ""},
		{"x/0.169 (Linux)", ""},
		{"x/v0.169.0 (Linux)", ""},
		{"x/0.169.0.1 (Linux)", ""},
		{"x/0.169.0-beta_1 (Linux)", ""},
		{"/0.169.0 (Linux)", ""},
	}
	for _, tc := range cases {
		got, ok := appserver.ParseUserAgentVersion(tc.ua)
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("ParseUserAgentVersion(%q) = %q, %v; want %q", tc.ua, got, ok, tc.want)
		}
	}
}

func TestCheckVersionAgainstFloor(t *testing.T) {
	t.Parallel()
	ua := func(v string) string {
		return "harness-operator/" + v + " (Debian 12.0.0; x86_64) xterm (harness-operator; 1)"
	}
	cases := []struct {
		name       string
		userAgent  string
		minVersion string
		wantErr    string // exact message; "" = accepted
	}{
		{"pinned release", ua("0.169.0"), "", ""},
		{"the floor itself", ua("0.149.0"), "", ""},
		{"patch above floor", ua("0.149.1"), "", ""},
		{"newer major", ua("1.0.0"), "", ""},
		{"prerelease above floor", ua("0.170.0-alpha.2"), "", ""},
		{"build metadata on the floor", ua("0.149.0+abc"), "", ""},
		{"newest release below floor", ua("0.148.0"), "", "Codex app-server 0.149.0 or newer is required, but detected 0.148.0. Update the AgentHarness image to a newer Codex release."},
		{"prerelease of the floor", ua("0.149.0-alpha.8"), "", "Codex app-server 0.149.0 or newer is required, but detected 0.149.0-alpha.8. Update the AgentHarness image to a newer Codex release."},
		{"old release", ua("0.2.0"), "", "Codex app-server 0.149.0 or newer is required, but detected 0.2.0. Update the AgentHarness image to a newer Codex release."},
		{"missing userAgent", "", "", "Codex app-server 0.149.0 or newer is required, but the running Codex version could not be determined. Update the AgentHarness image to a newer Codex release."},
		{"unparsable userAgent", "codex", "", "Codex app-server 0.149.0 or newer is required, but the running Codex version could not be determined. Update the AgentHarness image to a newer Codex release."},
		{"leading zero", ua("0.0169.0"), "", "Codex app-server 0.149.0 or newer is required, but the running Codex version could not be determined. Update the AgentHarness image to a newer Codex release."},
		{"minVersion raises the floor", ua("0.169.0"), "0.170.0", "Codex app-server 0.170.0 or newer is required, but detected 0.169.0. Update the AgentHarness image to a newer Codex release."},
		{"minVersion equal to server", ua("0.169.0"), "0.169.0", ""},
		{"minVersion cannot lower the floor", ua("0.148.0"), "0.100.0", "Codex app-server 0.149.0 or newer is required, but detected 0.148.0. Update the AgentHarness image to a newer Codex release."},
		{"raised floor, undetermined", "", "0.170.0", "Codex app-server 0.170.0 or newer is required, but the running Codex version could not be determined. Update the AgentHarness image to a newer Codex release."},
	}
	for _, tc := range cases {
		v, err := appserver.CheckVersion(tc.userAgent, tc.minVersion)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%s: CheckVersion(%q, %q) = %v", tc.name, tc.userAgent, tc.minVersion, err)
			} else if v == nil {
				t.Errorf("%s: no version returned", tc.name)
			}
			continue
		}
		var ve *appserver.VersionError
		if !errors.As(err, &ve) {
			t.Errorf("%s: CheckVersion(%q, %q) = %v, want a *VersionError", tc.name, tc.userAgent, tc.minVersion, err)
			continue
		}
		if err.Error() != tc.wantErr {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, err.Error(), tc.wantErr)
		}
		if ve.UserAgent != tc.userAgent {
			t.Errorf("%s: VersionError.UserAgent = %q", tc.name, ve.UserAgent)
		}
	}
}

func TestFloor(t *testing.T) {
	t.Parallel()
	if appserver.MinimumVersion != "0.149.0" {
		t.Fatalf("MinimumVersion = %s", appserver.MinimumVersion)
	}
	for in, want := range map[string]string{"": "0.149.0", "0.100.0": "0.149.0", "0.149.0": "0.149.0", "0.170.0": "0.170.0", "0.149.0-rc.1": "0.149.0"} {
		f, err := appserver.Floor(in)
		if err != nil || f.String() != want {
			t.Errorf("Floor(%q) = %v, %v; want %s", in, f, err, want)
		}
	}
	for _, bad := range []string{"latest", "v0.170.0", "0.170", "0.170.0.1"} {
		if _, err := appserver.Floor(bad); err == nil {
			t.Errorf("Floor(%q) accepted an invalid minVersion", bad)
		}
	}
}
