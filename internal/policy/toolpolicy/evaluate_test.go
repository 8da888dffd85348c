package toolpolicy

import (
	"slices"
	"testing"
)

// codexNative is the native surface the defaulter declares for Codex
// (docs/api.md, AgentHarness).
var codexNative = []string{"exec", "process", "read", "write", "edit", "apply_patch"}

const (
	noSafeList     = "no safe-deny list"
	safeNeedsExact = "safe-deny list is honoured only with support Exact"
	finiteAllow    = `is a finite allowlist (no "*")`
	emptyAllow     = "is empty: every tool is denied"
)

func deny(names ...string) []Layer { return []Layer{{Name: "agent", Deny: names}} }

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name        string
		in          Input
		wantRestr   bool
		wantSafe    []string
		wantReasons []string
	}{
		// Without a safe list every explicit restriction isolates the native surface.
		{
			name: "no policy at all does not restrict",
			in:   Input{},
		},
		{
			name: "an absent toolsAllow restricts nothing",
			in:   Input{ToolsAllow: nil, Layers: []Layer{{Name: "global"}}},
		},
		{
			name:        "toolsAllow [] denies every tool",
			in:          Input{ToolsAllow: []string{}},
			wantRestr:   true,
			wantReasons: []string{"toolsAllow " + emptyAllow},
		},
		{
			name:        "a finite toolsAllow restricts",
			in:          Input{ToolsAllow: []string{"read"}},
			wantRestr:   true,
			wantReasons: []string{"toolsAllow " + finiteAllow},
		},
		{
			name:        "a toolsAllow group is still finite",
			in:          Input{ToolsAllow: []string{"group:openclaw"}},
			wantRestr:   true,
			wantReasons: []string{"toolsAllow " + finiteAllow},
		},
		{
			name: "a toolsAllow containing * does not restrict",
			in:   Input{ToolsAllow: []string{"read", " * "}},
		},
		{
			name:        "toolsAllow of blank names is empty and denies every tool",
			in:          Input{ToolsAllow: []string{" "}},
			wantRestr:   true,
			wantReasons: []string{"toolsAllow " + emptyAllow},
		},
		{
			name:        "disableTools denies every tool",
			in:          Input{DisableTools: true},
			wantRestr:   true,
			wantReasons: []string{"disableTools denies every tool"},
		},
		{
			name:        "any non-empty deny restricts without a safe list",
			in:          Input{Layers: deny("exec")},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny exec restricts (` + noSafeList + ")"},
		},
		{
			name:        "a deny group is expanded in the reason",
			in:          Input{Layers: deny("group:web")},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny web_search, web_fetch, x_search restricts (` + noSafeList + ")"},
		},
		{
			name: "an empty deny list denies nothing",
			in:   Input{Layers: []Layer{{Name: "agent", Deny: []string{}}}},
		},
		{
			name: "a deny of blank names denies nothing",
			in:   Input{Layers: deny("  ")},
		},
		{
			name: "a layer without allow (nil) is absent",
			in:   Input{Layers: []Layer{{Name: "agent", Allow: nil}}},
		},
		{
			name:        "a layer allow [] denies every tool",
			in:          Input{Layers: []Layer{{Name: "agent", Allow: []string{}}}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": allow ` + emptyAllow},
		},
		{
			name:        "a finite layer allowlist restricts",
			in:          Input{Layers: []Layer{{Name: "provider", Allow: []string{"group:fs", "exec"}}}},
			wantRestr:   true,
			wantReasons: []string{`layer "provider": allow ` + finiteAllow},
		},
		{
			name: "a layer allowlist containing * does not restrict",
			in:   Input{Layers: []Layer{{Name: "agent", Allow: []string{"*", "exec"}}}},
		},
		{
			name:        "an unknown group in an allowlist is an unknown entry, not a wildcard",
			in:          Input{Layers: []Layer{{Name: "agent", Allow: []string{"group:all"}}}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": allow ` + finiteAllow},
		},
		{
			name:        "the safe list is ignored without Exact support",
			in:          Input{Layers: deny("exec"), SafeDenyTools: []string{"exec"}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny exec restricts (` + safeNeedsExact + ")"},
		},
		{
			name:        "Exact without a safe list keeps the conservative behaviour",
			in:          Input{Layers: deny("exec"), Support: SupportExact},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny exec restricts (` + noSafeList + ")"},
		},
		{
			name:        "a non-nil empty safe list is no safe list",
			in:          Input{Layers: deny("exec"), Support: SupportExact, SafeDenyTools: []string{}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny exec restricts (` + noSafeList + ")"},
		},
		{
			name:        "support is matched exactly: lower-case exact is not Exact",
			in:          Input{Layers: deny("exec"), Support: "exact", SafeDenyTools: []string{"exec"}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny exec restricts (` + safeNeedsExact + ")"},
		},

		// With a safe list (Exact only) a deny relaxes only when every expanded name
		// is a known core tool id in the list.
		{
			name:     "a deny fully covered by the safe list does not restrict",
			in:       Input{Layers: deny("exec"), Support: SupportExact, SafeDenyTools: []string{"exec", "process"}},
			wantSafe: []string{"exec"},
		},
		{
			name:     "an aliased deny is covered by its canonical id",
			in:       Input{Layers: deny(" Bash "), Support: SupportExact, SafeDenyTools: []string{"exec"}},
			wantSafe: []string{"exec"},
		},
		{
			name:     "safe list entries are normalized",
			in:       Input{Layers: deny("exec"), Support: SupportExact, SafeDenyTools: []string{" EXEC "}},
			wantSafe: []string{"exec"},
		},
		{
			name:     "a group whose members are all in the safe list relaxes",
			in:       Input{Layers: deny("group:web"), Support: SupportExact, SafeDenyTools: []string{"x_search", "web_fetch", "web_search"}},
			wantSafe: []string{"web_fetch", "web_search", "x_search"},
		},
		{
			name:        "a group containing any name outside the safe list restricts",
			in:          Input{Layers: deny("group:runtime"), Support: SupportExact, SafeDenyTools: []string{"exec", "process"}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny code_execution, secrets not covered by the safe-deny list`},
		},
		{
			name:        "a wildcard deny restricts",
			in:          Input{Layers: deny("*"), Support: SupportExact, SafeDenyTools: []string{"exec"}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny * not covered by the safe-deny list`},
		},
		{
			name:        "an unknown deny name restricts",
			in:          Input{Layers: deny("exec", "shell"), Support: SupportExact, SafeDenyTools: []string{"exec"}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny shell not covered by the safe-deny list`},
		},
		{
			name:        "an unknown group deny restricts",
			in:          Input{Layers: deny("group:nope"), Support: SupportExact, SafeDenyTools: []string{"exec"}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny group:nope not covered by the safe-deny list`},
		},
		{
			name:        "an unknown name in the safe list covers nothing",
			in:          Input{Layers: deny("shell"), Support: SupportExact, SafeDenyTools: []string{"shell"}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny shell not covered by the safe-deny list`},
		},
		{
			name:        "a wildcard in the safe list covers nothing",
			in:          Input{Layers: deny("exec"), Support: SupportExact, SafeDenyTools: []string{"*"}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny exec not covered by the safe-deny list`},
		},
		{
			name:        "a group in the safe list covers nothing",
			in:          Input{Layers: deny("read"), Support: SupportExact, SafeDenyTools: []string{"group:fs"}},
			wantRestr:   true,
			wantReasons: []string{`layer "agent": deny read not covered by the safe-deny list`},
		},
		{
			name: "a finite allowlist still restricts with a safe list",
			in: Input{
				Layers:        []Layer{{Name: "agent", Allow: []string{"read"}, Deny: []string{"exec"}}},
				Support:       SupportExact,
				SafeDenyTools: []string{"exec"},
			},
			wantRestr:   true,
			wantSafe:    []string{"exec"},
			wantReasons: []string{`layer "agent": allow ` + finiteAllow},
		},
		{
			name:        "toolsAllow [] still restricts with a safe list",
			in:          Input{ToolsAllow: []string{}, Layers: deny("exec"), Support: SupportExact, SafeDenyTools: []string{"exec"}},
			wantRestr:   true,
			wantSafe:    []string{"exec"},
			wantReasons: []string{"toolsAllow " + emptyAllow},
		},
		{
			name:        "disableTools still restricts with a safe list",
			in:          Input{DisableTools: true, Support: SupportExact, SafeDenyTools: []string{"exec"}},
			wantRestr:   true,
			wantReasons: []string{"disableTools denies every tool"},
		},
		{
			name: "safe-denied tools are sorted and de-duplicated across layers",
			in: Input{
				Layers:        []Layer{{Name: "global", Deny: []string{"process", "exec"}}, {Name: "agent", Deny: []string{"bash", "exec"}}},
				Support:       SupportExact,
				SafeDenyTools: []string{"exec", "process"},
			},
			wantSafe: []string{"exec", "process"},
		},
		{
			name: "only deny layers fully covered by the safe list are reported as safe-denied",
			in: Input{
				Layers:        []Layer{{Name: "global", Deny: []string{"process"}}, {Name: "agent", Deny: []string{"exec", "shell"}}},
				Support:       SupportExact,
				SafeDenyTools: []string{"exec", "process"},
			},
			wantRestr:   true,
			wantSafe:    []string{"process"},
			wantReasons: []string{`layer "agent": deny shell not covered by the safe-deny list`},
		},

		// Declared native tools the effective profile (plus alsoAllow) does not allow.
		{
			name:        "codex native tools under messaging restrict",
			in:          Input{Profile: ProfileMessaging, NativeTools: codexNative},
			wantRestr:   true,
			wantReasons: []string{`native tools not allowed by profile "messaging": apply_patch, edit, exec, process, read, write`},
		},
		{
			name: "codex native tools under coding do not restrict",
			in:   Input{Profile: ProfileCoding, NativeTools: codexNative},
		},
		{
			name: "codex native tools under full do not restrict",
			in:   Input{Profile: ProfileFull, NativeTools: codexNative},
		},
		{
			name: "codex native tools under the empty profile do not restrict",
			in:   Input{NativeTools: codexNative},
		},
		{
			name: "profile names are normalized",
			in:   Input{Profile: " Coding ", NativeTools: codexNative},
		},
		{
			name: "alsoAllow groups admit native tools",
			in:   Input{Profile: ProfileMessaging, AlsoAllow: []string{"group:fs", "group:runtime"}, NativeTools: codexNative},
		},
		{
			name: "alsoAllow * admits every native tool",
			in:   Input{Profile: ProfileMinimal, AlsoAllow: []string{"*"}, NativeTools: codexNative},
		},
		{
			name:        "alsoAllow that covers only part of the native tools still restricts",
			in:          Input{Profile: ProfileMessaging, AlsoAllow: []string{"group:fs"}, NativeTools: codexNative},
			wantRestr:   true,
			wantReasons: []string{`native tools not allowed by profile "messaging": exec, process`},
		},
		{
			name:        "native tool aliases are normalized",
			in:          Input{Profile: ProfileMinimal, NativeTools: []string{"bash", "gateway"}},
			wantRestr:   true,
			wantReasons: []string{`native tools not allowed by profile "minimal": exec`},
		},
		{
			name:        "an unknown native tool is not allowed by a finite profile",
			in:          Input{Profile: ProfileCoding, NativeTools: []string{"codex_shell"}},
			wantRestr:   true,
			wantReasons: []string{`native tools not allowed by profile "coding": codex_shell`},
		},
		{
			name: "default tool-profile narrowing alone does not restrict",
			in:   Input{Profile: ProfileMinimal},
		},
		{
			name:        "an unknown profile fails closed",
			in:          Input{Profile: "Paranoid"},
			wantRestr:   true,
			wantReasons: []string{`unknown tool profile "paranoid" (fails closed)`},
		},

		// The host's prepared verdict: the stricter one wins.
		{
			name:        "the host's pluginHarnessToolPolicyRestricted restricts on its own",
			in:          Input{HostRestricted: true, Profile: ProfileCoding, NativeTools: codexNative},
			wantRestr:   true,
			wantReasons: []string{"host prepared pluginHarnessToolPolicyRestricted"},
		},
		{
			name:        "the host's verdict wins over a deny the safe list relaxed",
			in:          Input{HostRestricted: true, Layers: deny("exec"), Support: SupportExact, SafeDenyTools: []string{"exec"}},
			wantRestr:   true,
			wantSafe:    []string{"exec"},
			wantReasons: []string{"host prepared pluginHarnessToolPolicyRestricted"},
		},

		// Reasons are deterministic.
		{
			name:        "unnamed layers are identified by index",
			in:          Input{Layers: []Layer{{}, {Deny: []string{"exec"}}}},
			wantRestr:   true,
			wantReasons: []string{`layer "layers[1]": deny exec restricts (` + noSafeList + ")"},
		},
		{
			name: "reasons follow a fixed order: host, disableTools, toolsAllow, layers, profile",
			in: Input{
				Profile:        ProfileMessaging,
				NativeTools:    []string{"exec"},
				Layers:         []Layer{{Name: "global", Deny: []string{"*"}}, {Name: "agent", Allow: []string{}}},
				ToolsAllow:     []string{"read"},
				DisableTools:   true,
				HostRestricted: true,
			},
			wantRestr: true,
			wantReasons: []string{
				"host prepared pluginHarnessToolPolicyRestricted",
				"disableTools denies every tool",
				"toolsAllow " + finiteAllow,
				`layer "global": deny * restricts (` + noSafeList + ")",
				`layer "agent": allow ` + emptyAllow,
				`native tools not allowed by profile "messaging": exec`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Evaluate(tt.in)
			if got.Restricted != tt.wantRestr {
				t.Errorf("Restricted = %v, want %v (reasons %q)", got.Restricted, tt.wantRestr, got.Reasons)
			}
			if !slices.Equal(got.SafeDeniedTools, tt.wantSafe) {
				t.Errorf("SafeDeniedTools = %q, want %q", got.SafeDeniedTools, tt.wantSafe)
			}
			if !slices.Equal(got.Reasons, tt.wantReasons) {
				t.Errorf("Reasons = %q, want %q", got.Reasons, tt.wantReasons)
			}
			if got.Restricted != (len(got.Reasons) > 0) {
				t.Errorf("Restricted = %v but %d reasons: every restriction must be explained", got.Restricted, len(got.Reasons))
			}
		})
	}
}

// TestEvaluateDoesNotModifyInput checks purity: callers pass API objects straight in.
func TestEvaluateDoesNotModifyInput(t *testing.T) {
	in := Input{
		Profile:       "Messaging",
		AlsoAllow:     []string{"Group:FS"},
		Layers:        []Layer{{Name: "agent", Allow: []string{"*"}, Deny: []string{"Bash", "process"}}},
		ToolsAllow:    []string{"*"},
		Support:       SupportExact,
		SafeDenyTools: []string{"process", "EXEC"},
		NativeTools:   []string{"bash"},
	}
	before := []string{in.AlsoAllow[0], in.Layers[0].Deny[0], in.Layers[0].Deny[1], in.SafeDenyTools[1], in.NativeTools[0]}
	first := Evaluate(in)
	second := Evaluate(in)
	after := []string{in.AlsoAllow[0], in.Layers[0].Deny[0], in.Layers[0].Deny[1], in.SafeDenyTools[1], in.NativeTools[0]}
	if !slices.Equal(before, after) {
		t.Fatalf("Evaluate modified its input: %q -> %q", before, after)
	}
	if first.Restricted != second.Restricted || !slices.Equal(first.SafeDeniedTools, second.SafeDeniedTools) || !slices.Equal(first.Reasons, second.Reasons) {
		t.Fatalf("Evaluate is not deterministic: %+v vs %+v", first, second)
	}
	if !first.Restricted || !slices.Equal(first.SafeDeniedTools, []string{"exec", "process"}) {
		t.Fatalf("Evaluate(%+v) = %+v, want restricted (native exec outside messaging+fs) with safe-denied [exec process]", in, first)
	}
}

func BenchmarkEvaluate(b *testing.B) {
	in := Input{
		Profile:   ProfileCoding,
		AlsoAllow: []string{"group:messaging"},
		Layers: []Layer{
			{Name: "global", Deny: []string{"group:web"}},
			{Name: "agent", Allow: []string{"*"}, Deny: []string{"bash", "process"}},
		},
		Support:       SupportExact,
		SafeDenyTools: []string{"exec", "process", "web_search", "web_fetch", "x_search"},
		NativeTools:   codexNative,
	}
	b.ReportAllocs()
	for b.Loop() {
		if v := Evaluate(in); v.Restricted {
			b.Fatalf("unexpected restriction: %q", v.Reasons)
		}
	}
}
