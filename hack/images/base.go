package main

import (
	"fmt"
)

// nonroot is the uid and gid every image runs as (the chart's and the
// operator's runAsUser), as in distroless images.
const nonroot = 65532

// baseTree is the one base layer under every image, local and released:
// Debian's CA certificates, the users and groups, and the directories a
// program expects. No tzdata: no program in the images loads a time zone
// (the manager and dispatcher log and compute in UTC; Codex is a static musl
// binary that formats times itself), so it would be 1.5 MB of dead weight.
func baseTree(certs *debContent) (*tree, error) {
	t := newTree()
	pem, err := certs.certificates()
	if err != nil {
		return nil, err
	}
	steps := []error{
		t.dir("/etc/ssl/certs", 0o755, 0, 0),
		t.file("/etc/ssl/certs/ca-certificates.crt", 0o644, pem, certs.pkg.String()),
		t.file("/etc/passwd", 0o644, []byte(passwd("/sbin/nologin")), "base"),
		t.file("/etc/group", 0o644, []byte(group), "base"),
		// Go's resolver and glibc read the order of sources here; without
		// the file glibc would try DNS before /etc/hosts.
		t.file("/etc/nsswitch.conf", 0o644, []byte(nsswitch), "base"),
		t.dir("/root", 0o700, 0, 0),
		t.dir("/home/nonroot", 0o700, nonroot, nonroot),
		t.dir("/tmp", 0o1777, 0, 0),
	}
	for _, err := range steps {
		if err != nil {
			return nil, err
		}
	}
	for _, f := range certs.files {
		if f.path == "/usr/share/doc/"+certs.pkg.Name+"/copyright" {
			if err := t.file(f.path, 0o644, f.data, certs.pkg.String()); err != nil {
				return nil, err
			}
		}
	}
	return t, t.file("/var/lib/dpkg/status.d/"+certs.pkg.Name, 0o644, certs.control, certs.pkg.String())
}

// passwd is /etc/passwd with the given login shell for nonroot: none in the
// base, bash in the Codex image (Codex starts the user's shell for commands).
func passwd(shell string) string {
	return "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:%s\n", nonroot, nonroot, shell)
}

var group = fmt.Sprintf("root:x:0:\nnobody:x:65534:\nnonroot:x:%d:\n", nonroot)

const nsswitch = `passwd: files
group: files
shadow: files
hosts: files dns
networks: files
protocols: files
services: files
`
