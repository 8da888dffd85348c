package toolpolicy

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestCatalogHasExactly61CoreToolIDs(t *testing.T) {
	ids := CoreToolIDs()
	if len(ids) != 61 {
		t.Fatalf("len(CoreToolIDs()) = %d, want 61", len(ids))
	}
	if !slices.IsSorted(ids) {
		t.Errorf("CoreToolIDs() is not sorted: %v", ids)
	}
	if got := slices.Compact(slices.Clone(ids)); len(got) != 61 {
		t.Errorf("CoreToolIDs() has duplicates: %v", ids)
	}
}

func TestCoreToolIDsReturnsACopy(t *testing.T) {
	ids := CoreToolIDs()
	ids[0] = "tampered"
	if got := CoreToolIDs()[0]; got == "tampered" {
		t.Fatal("CoreToolIDs() exposes the package's slice")
	}
	members, _ := ExpandGroup("group:fs")
	members[0] = "tampered"
	if again, _ := ExpandGroup("group:fs"); again[0] != "ls" {
		t.Fatalf("ExpandGroup() exposes the package's slice: %v", again)
	}
	profile, _ := ProfileMembers(ProfileMinimal)
	profile[0] = "tampered"
	if again, _ := ProfileMembers(ProfileMinimal); again[0] != "session_status" {
		t.Fatalf("ProfileMembers() exposes the package's slice: %v", again)
	}
}

// TestCatalogMatchesReferenceTSV guards against drift between the compiled-in data
// and the reference file it was transcribed from (a copy lives in testdata).
func TestCatalogMatchesReferenceTSV(t *testing.T) {
	f, err := os.Open("testdata/openclaw-tool-catalog.tsv")
	if err != nil {
		t.Fatalf("open reference: %v", err)
	}
	defer func() { _ = f.Close() }()
	var groups []string
	profiles := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, list, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("malformed line %q", line)
		}
		members := strings.Split(list, ",")
		switch {
		case strings.HasPrefix(key, GroupPrefix):
			groups = append(groups, key)
			got, ok := ExpandGroup(key)
			if !ok {
				t.Errorf("ExpandGroup(%q) unknown, want known", key)
				continue
			}
			if !slices.Equal(got, members) {
				t.Errorf("ExpandGroup(%q) = %v, want %v", key, got, members)
			}
		case strings.HasPrefix(key, "profile:"):
			profiles[strings.TrimPrefix(key, "profile:")] = members
		default:
			t.Errorf("unexpected key %q", key)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read reference: %v", err)
	}
	if got := GroupNames(); !slices.Equal(got, groups) {
		t.Errorf("GroupNames() = %v, want %v", got, groups)
	}
	var names []string
	for name, want := range profiles {
		names = append(names, name)
		got, ok := ProfileMembers(name)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("ProfileMembers(%q) = %v, %v; want %v", name, got, ok, want)
		}
	}
	slices.Sort(names)
	if got := ProfileNames(); !slices.Equal(got, names) {
		t.Errorf("ProfileNames() = %v, want %v", got, names)
	}
}

func TestEveryProfileMemberExceptBundleMCPIsACoreTool(t *testing.T) {
	for _, profile := range []string{ProfileMinimal, ProfileCoding, ProfileMessaging} {
		members, ok := ProfileMembers(profile)
		if !ok {
			t.Fatalf("profile %q unknown", profile)
		}
		for _, m := range members {
			if m == BundleMCP {
				continue
			}
			if !IsCoreTool(m) {
				t.Errorf("profile %q member %q is not a core tool", profile, m)
			}
		}
	}
	if IsCoreTool(BundleMCP) {
		t.Errorf("IsCoreTool(%q) = true, want false: it is a profile marker, not a tool", BundleMCP)
	}
	if full, _ := ProfileMembers(ProfileFull); !slices.Equal(full, []string{Wildcard}) {
		t.Errorf("ProfileMembers(full) = %v, want [*]", full)
	}
}

func TestIsCoreTool(t *testing.T) {
	tests := []struct {
		name string
		id   string
		want bool
	}{
		{"a runtime tool is core", "exec", true},
		{"canvas is core although only group:ui lists it", "canvas", true},
		{"openclaw the tool is core", "openclaw", true},
		{"bundle-mcp is a profile marker, not a tool", "bundle-mcp", false},
		{"the wildcard is not a tool", "*", false},
		{"a group is not a tool", "group:fs", false},
		{"IsCoreTool does not normalize case", "EXEC", false},
		{"IsCoreTool does not resolve aliases", "bash", false},
		{"the empty name is not a tool", "", false},
		{"an unknown name is not a tool", "shell", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsCoreTool(tt.id); got != tt.want {
				t.Errorf("IsCoreTool(%q) = %v, want %v", tt.id, got, tt.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"trims and lower-cases", "  Read\t", "read"},
		{"bash is an alias of exec", "bash", "exec"},
		{"aliases match after case folding", " BASH ", "exec"},
		{"apply-patch is an alias of apply_patch", "apply-patch", "apply_patch"},
		{"cron is an alias of automations", "Cron", "automations"},
		{"groups are lower-cased", "Group:FS", "group:fs"},
		{"the wildcard is unchanged", " * ", "*"},
		{"unknown names are kept", "My_Tool", "my_tool"},
		{"blank becomes empty", "   ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Normalize(tt.in); got != tt.want {
				t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestExpandGroup(t *testing.T) {
	openclaw, _ := ExpandGroup("group:openclaw")
	tests := []struct {
		name   string
		group  string
		want   []string
		wantOK bool
	}{
		{"group:fs expands to file tools", "group:fs", []string{"ls", "read", "write", "edit", "apply_patch"}, true},
		{"group:runtime expands to exec, process, code_execution, secrets", "group:runtime", []string{"exec", "process", "code_execution", "secrets"}, true},
		{"group:messaging is just message", "group:messaging", []string{"message"}, true},
		{"group names are normalized", " Group:Web ", []string{"web_search", "web_fetch", "x_search"}, true},
		{"group:openclaw expands to its 53 members", "group:openclaw", openclaw, true},
		{"an unknown group is not expanded", "group:nope", nil, false},
		{"a tool id is not a group", "exec", nil, false},
		{"the wildcard is not a group", "*", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ExpandGroup(tt.group)
			if ok != tt.wantOK || !slices.Equal(got, tt.want) {
				t.Errorf("ExpandGroup(%q) = %v, %v; want %v, %v", tt.group, got, ok, tt.want, tt.wantOK)
			}
		})
	}
	if len(openclaw) != 53 {
		t.Errorf("len(group:openclaw) = %d, want 53", len(openclaw))
	}
	for _, notOpenClaw := range []string{"exec", "process", "read", "canvas"} {
		if slices.Contains(openclaw, notOpenClaw) {
			t.Errorf("group:openclaw contains %q, which the catalog lists only elsewhere", notOpenClaw)
		}
	}
}

func TestEveryGroupExpandsToCoreTools(t *testing.T) {
	union := map[string]struct{}{}
	for _, g := range GroupNames() {
		members, ok := ExpandGroup(g)
		if !ok || len(members) == 0 {
			t.Fatalf("ExpandGroup(%q) = %v, %v", g, members, ok)
		}
		for _, m := range members {
			if !IsCoreTool(m) {
				t.Errorf("%s member %q is not a core tool", g, m)
			}
			union[m] = struct{}{}
		}
	}
	if len(union) != len(CoreToolIDs()) {
		t.Errorf("union of groups has %d ids, catalog has %d", len(union), len(CoreToolIDs()))
	}
}

func TestExpandNames(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"nil expands to empty", nil, []string{}},
		{"names are normalized and aliases resolved", []string{" Bash", "apply-patch"}, []string{"exec", "apply_patch"}},
		{"groups are replaced by their members", []string{"group:memory", "message"}, []string{"memory_search", "memory_get", "message"}},
		{"the wildcard is kept", []string{"*", "read"}, []string{"*", "read"}},
		{"unknown names stay visible", []string{"shell", "read"}, []string{"shell", "read"}},
		{"unknown groups stay visible as unknown entries", []string{"Group:Nope"}, []string{"group:nope"}},
		{"duplicates collapse, first occurrence wins", []string{"read", "group:fs", "READ"}, []string{"read", "ls", "write", "edit", "apply_patch"}},
		{"overlapping groups collapse", []string{"group:runtime", "exec", "group:openclaw"}, append([]string{"exec", "process"}, mustGroup(t, "group:openclaw")...)},
		{"blank entries name no tool", []string{" ", ""}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ExpandNames(tt.in)
			if got == nil || !slices.Equal(got, tt.want) {
				t.Errorf("ExpandNames(%v) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

// mustGroup returns a group's members or fails the test.
func mustGroup(t *testing.T, name string) []string {
	t.Helper()
	members, ok := ExpandGroup(name)
	if !ok {
		t.Fatalf("unknown group %q", name)
	}
	return members
}

func TestProfileAllows(t *testing.T) {
	tests := []struct {
		name    string
		profile string
		tool    string
		want    bool
		wantErr bool
	}{
		{"minimal allows session_status", "minimal", "session_status", true, false},
		{"minimal does not allow exec", "minimal", "exec", false, false},
		{"coding allows exec", "coding", "exec", true, false},
		{"coding allows bash through its alias", "coding", "Bash", true, false},
		{"coding does not allow message", "coding", "message", false, false},
		{"coding does not allow canvas", "coding", "canvas", false, false},
		{"messaging allows message", "messaging", "message", true, false},
		{"messaging does not allow exec", "messaging", "exec", false, false},
		{"messaging lists bundle-mcp", "messaging", "bundle-mcp", true, false},
		{"full allows any tool", "full", "canvas", true, false},
		{"full allows even unknown names", "full", "shell", true, false},
		{"empty profile means full", "", "exec", true, false},
		{"profile names are normalized", " Coding ", "read", true, false},
		{"an unknown profile is an error", "paranoid", "read", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ProfileAllows(tt.profile, tt.tool)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ProfileAllows(%q, %q) error = %v, wantErr %v", tt.profile, tt.tool, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrUnknownProfile) {
				t.Errorf("error %v does not wrap ErrUnknownProfile", err)
			}
			if got != tt.want {
				t.Errorf("ProfileAllows(%q, %q) = %v, want %v", tt.profile, tt.tool, got, tt.want)
			}
		})
	}
}
