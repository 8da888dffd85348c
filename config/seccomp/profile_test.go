// Package seccomp_test checks the shape of codex-sandbox.json, the Localhost
// seccomp profile under which Codex's sandbox (bubblewrap) runs in a
// restricted Pod (docs/install.md installs it, docs/security.md records the
// probe). The profile is the container runtime's default, rule for rule,
// plus one rule that allows exactly the calls bubblewrap needs to build its
// namespaces without CAP_SYS_ADMIN. Everything else the default refuses
// stays refused.
package seccomp_test

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"testing"
)

// runtimeDefault is the seccomp section containerd 1.6.20 (the e2e node's
// runtime) generated on amd64 for a RuntimeDefault container that holds no
// capability, read from the container's OCI config on that node. No module
// of the build carries a runtime's profile, so this record is the
// reference; the system e2e compares it with the node's live default.
const runtimeDefault = "testdata/containerd-1.6.20-runtime-default-amd64.json"

// sandboxCalls are the calls the profile adds. Each was tried on the real
// node: without any one of them the sandbox check fails (bwrap's messages
// are in docs/security.md); setns and sethostname, also refused by the
// default, were not needed. clone is allowed with namespace flags (the
// default allows it only without them).
var sandboxCalls = []string{"clone", "mount", "pivot_root", "umount2", "unshare"}

// stillRefused are calls the runtime default refuses that the sandbox does
// not need; the profile must go on refusing them.
var stillRefused = []string{
	"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "setns", "sethostname",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"open_by_handle_at", "name_to_handle_at", "userfaultfd", "chroot", "umount",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"process_vm_readv", "process_vm_writev", "kcmp", "syslog", "reboot", "swapon", "acct",
}

type profile struct {
	DefaultAction   string   `json:"defaultAction"`
	DefaultErrnoRet *uint    `json:"defaultErrnoRet,omitempty"`
	Architectures   []string `json:"architectures"`
	Flags           []string `json:"flags,omitempty"`
	ListenerPath    string   `json:"listenerPath,omitempty"`
	Syscalls        []rule   `json:"syscalls"`
}

type rule struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []arg    `json:"args,omitempty"`
}

type arg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

func load(t *testing.T, path string) profile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p profile
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// allowed is every call some rule of p allows, with or without a condition
// on its arguments.
func allowed(p profile) map[string]bool {
	out := map[string]bool{}
	for _, r := range p.Syscalls {
		if r.Action == "SCMP_ACT_ALLOW" {
			for _, n := range r.Names {
				out[n] = true
			}
		}
	}
	return out
}

func TestCodexSandboxProfileIsTheRuntimeDefaultPlusTheSandboxCalls(t *testing.T) {
	p, base := load(t, "codex-sandbox.json"), load(t, runtimeDefault)

	if p.DefaultAction != "SCMP_ACT_ERRNO" || p.DefaultErrnoRet != nil {
		t.Fatalf("defaultAction %q (errno %v): a call no rule names must fail with EPERM, as under the runtime default", p.DefaultAction, p.DefaultErrnoRet)
	}
	if p.DefaultAction != base.DefaultAction || !slices.Equal(p.Architectures, base.Architectures) {
		t.Errorf("defaultAction %q, architectures %v: want the runtime default's %q, %v", p.DefaultAction, p.Architectures, base.DefaultAction, base.Architectures)
	}
	if len(p.Flags) > 0 || p.ListenerPath != "" {
		t.Errorf("flags %v, listenerPath %q: the runtime default has neither", p.Flags, p.ListenerPath)
	}
	for _, r := range p.Syscalls {
		if r.Action != "SCMP_ACT_ALLOW" && r.Action != "SCMP_ACT_ERRNO" {
			t.Errorf("rule %v: action %q (only allow and errno rules: no log, trace or notify)", r.Names, r.Action)
		}
	}

	// Superset: every rule of the runtime default, unchanged and in order.
	n := len(base.Syscalls)
	if len(p.Syscalls) != n+1 {
		t.Fatalf("%d rules, want the runtime default's %d plus one", len(p.Syscalls), n)
	}
	for i := range n {
		if !reflect.DeepEqual(p.Syscalls[i], base.Syscalls[i]) {
			t.Errorf("rule %d is %+v, the runtime default's is %+v", i, p.Syscalls[i], base.Syscalls[i])
		}
	}

	// The one added rule: exactly the sandbox's calls, allowed whatever
	// their arguments.
	extra := p.Syscalls[n]
	if names := slices.Sorted(slices.Values(extra.Names)); extra.Action != "SCMP_ACT_ALLOW" || len(extra.Args) > 0 || extra.ErrnoRet != nil ||
		!slices.Equal(names, sandboxCalls) {
		t.Errorf("added rule %+v: want an unconditional allow of %v", extra, sandboxCalls)
	}
	var added []string
	for name := range allowed(p) {
		if !allowed(base)[name] {
			added = append(added, name)
		}
	}
	slices.Sort(added)
	if want := []string{"mount", "pivot_root", "umount2", "unshare"}; !slices.Equal(added, want) {
		t.Errorf("calls the runtime default never allows that the profile allows: %v, want %v (and clone with namespace flags)", added, want)
	}

	for _, name := range stillRefused {
		if allowed(base)[name] {
			t.Errorf("%s: the runtime default allows it, it does not belong in this list", name)
		}
		if allowed(p)[name] {
			t.Errorf("%s is allowed: the sandbox does not need it and the runtime default refuses it", name)
		}
	}
}
