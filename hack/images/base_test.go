package main

import (
	"strings"
	"testing"
)

// Go's and Codex's TLS read one bundle; update-ca-certificates would write
// every certificate of the package, in path order. The image runs as 65532,
// which must be a named user and group.
func TestBaseHasTheCertificateBundleAndTheNonrootUser(t *testing.T) {
	certs := &debContent{
		pkg: debPackage{Name: "ca-certificates", Arch: "amd64", Version: "1"},
		files: []debFile{
			{path: "/usr/share/ca-certificates/mozilla/B.crt", kind: kindFile, data: []byte("-----B-----")},
			{path: "/usr/share/ca-certificates/mozilla/A.crt", kind: kindFile, data: []byte("-----A-----\n")},
			{path: "/usr/share/ca-certificates/mozilla/README", kind: kindFile, data: []byte("not a certificate")},
			{path: "/usr/share/doc/ca-certificates/copyright", kind: kindFile, data: []byte("MPL")},
			{path: "/usr/sbin/update-ca-certificates", kind: kindFile, data: []byte("#!/bin/sh")},
		},
		control: []byte("Package: ca-certificates\n"),
	}
	base, err := baseTree(certs)
	if err != nil {
		t.Fatal(err)
	}
	content := func(p string) string {
		t.Helper()
		e, ok := base.entries[p]
		if !ok {
			t.Fatalf("base has no %s", p)
		}
		return string(e.data)
	}
	if got, want := content(certFile), "-----A-----\n-----B-----\n"; got != want {
		t.Errorf("%s = %q, want %q", certFile, got, want)
	}
	if !strings.Contains(content("/etc/passwd"), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot 65532:\n%s", content("/etc/passwd"))
	}
	if !strings.Contains(content("/etc/group"), "nonroot:x:65532:") {
		t.Errorf("/etc/group has no nonroot 65532:\n%s", content("/etc/group"))
	}
	if content("/usr/share/doc/ca-certificates/copyright") != "MPL" || content("/var/lib/dpkg/status.d/ca-certificates") == "" {
		t.Error("the package's copyright and its status.d stanza (what scanners read) are missing")
	}
	if _, ok := base.entries["/usr/sbin/update-ca-certificates"]; ok {
		t.Error("the base carries the package's programs; it needs only the certificates")
	}
	if e := base.entries["/tmp"]; e == nil || e.mode != 0o1777 {
		t.Errorf("/tmp = %+v, want a sticky world-writable directory", e)
	}
}
