package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A .deb whose content is not the pinned one is refused, and the error says
// which package and what was expected.
func TestVerifyRefusesADebWhoseSha256IsNotTheLocked(t *testing.T) {
	deb := filepath.Join(t.TempDir(), "bash.deb")
	must(t, os.WriteFile(deb, []byte("the real bash"), 0o644))
	sum := sha256.Sum256([]byte("the real bash"))
	pinned := debPackage{Name: "bash", Arch: "amd64", Version: "5.2.15-2+b13", SHA256: hex.EncodeToString(sum[:])}
	if err := pinned.verify(deb); err != nil {
		t.Fatalf("the pinned content was refused: %v", err)
	}

	must(t, os.WriteFile(deb, []byte("a tampered bash"), 0o644))
	err := pinned.verify(deb)
	if err == nil {
		t.Fatal("a .deb with another sha256 than the lock's was accepted")
	}
	for _, want := range []string{"bash:amd64=5.2.15-2+b13", pinned.SHA256, "refusing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestLockRoundTripsAndRejectsMalformedLines(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	l := lock{
		{Name: "sed", Arch: "arm64", Version: "4.9-1", SHA256: sum},
		{Name: "bash", Arch: "amd64", Version: "5.2.15-2+b13", SHA256: sum},
		{Name: "libattr1", Arch: "amd64", Version: "1:2.5.1-4", SHA256: sum},
	}
	parsed, err := parseLock(strings.NewReader(l.format()))
	if err != nil {
		t.Fatal(err)
	}
	if got := parsed.format(); got != l.format() {
		t.Fatalf("lock did not round-trip:\n%s", got)
	}
	amd64, err := parsed.forArch("amd64")
	if err != nil || len(amd64) != 2 || amd64[0].Name != "bash" {
		t.Fatalf("forArch(amd64) = %v, %v; want bash and libattr1, sorted", amd64, err)
	}
	if _, err := parsed.forArch("riscv64"); err == nil || !strings.Contains(err.Error(), "make images-lock") {
		t.Fatalf("forArch(riscv64) = %v, want an error saying how to pin it", err)
	}

	for _, tc := range []struct{ line, want string }{
		{"bash amd64 5.2", "want `package architecture version sha256`"},
		{"bash amd64 5.2 ABCD", `sha256 "ABCD" is not 64 lower-case hex digits`},
	} {
		if _, err := parseLock(strings.NewReader("# header\n" + tc.line + "\n")); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("parseLock(%q) = %v, want an error on line 2 containing %q", tc.line, err, tc.want)
		}
	}
}

func TestParseDependsKeepsAlternativesAndDropsVersions(t *testing.T) {
	got := parseDepends("libc6 (>= 2.34), dpkg (>= 1.15.4) | install-info, libpcre2-8-0:any")
	want := [][]string{{"libc6"}, {"dpkg", "install-info"}, {"libpcre2-8-0"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseDepends = %q, want %q", got, want)
	}
	// grep's `dpkg | install-info` is skipped as a whole; bash's libc6 is followed.
	if next, ok := pickAlternative([]string{"dpkg", "install-info"}); ok {
		t.Errorf("dpkg | install-info followed to %s, want skipped", next)
	}
	if next, ok := pickAlternative([]string{"libc6"}); !ok || next != "libc6" {
		t.Errorf("libc6 not followed: %q %v", next, ok)
	}
}
