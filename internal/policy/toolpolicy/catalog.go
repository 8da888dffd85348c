package toolpolicy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Wildcard is the allow/deny entry that names every tool. It is kept verbatim by
// expansion because it is never a core tool id and so never safe to relax.
const Wildcard = "*"

// GroupPrefix starts every group name (for example "group:fs").
const GroupPrefix = "group:"

// BundleMCP is the profile member that admits bundled MCP tools. It appears in the
// coding and messaging profiles but is not a core tool id, so it never satisfies
// IsCoreTool and never counts toward the 61-id catalog.
const BundleMCP = "bundle-mcp"

// Profile names known to the catalog. An empty profile means no narrowing and is
// treated like ProfileFull.
const (
	ProfileMinimal   = "minimal"
	ProfileCoding    = "coding"
	ProfileMessaging = "messaging"
	ProfileFull      = "full"
)

// ErrUnknownProfile is returned (wrapped) for a profile name outside the catalog, so
// callers can fail closed instead of guessing what the profile allows.
var ErrUnknownProfile = errors.New("unknown tool profile")

// catalogGroup is one "group:<section>" line of the reference TSV, members in file order.
type catalogGroup struct {
	name    string
	members []string
}

// catalogGroups mirrors the group lines of reference/openclaw-tool-catalog.tsv
// (openclaw 2026.9.6, src/agents/tool-catalog.ts). It is never written after
// initialisation; accessors hand out copies.
var catalogGroups = []catalogGroup{
	{"group:openclaw", []string{
		"code_execution", "secrets", "web_search", "web_fetch", "x_search", "memory_search",
		"memory_get", "sessions", "sessions_list", "sessions_history", "sessions_search",
		"conversations_list", "conversations_send", "conversations_turn", "sessions_send",
		"sessions_spawn", "github_identity_status", "github_publish", "agents_wait",
		"sessions_yield", "subagents", "session_status", "suggest_task", "dismiss_task",
		"browser", "screen", "theme", "dashboard", "terminal", "portal", "show_widget",
		"message", "heartbeat_respond", "automations", "gateway", "plugins", "openclaw",
		"nodes", "computer", "mobile_ui", "agents_list", "get_goal", "create_goal",
		"update_goal", "progress_card", "ask_user", "skill_workshop", "view_image",
		"image_generate", "music_generate", "video_generate", "tts", "pdf",
	}},
	{"group:fs", []string{"ls", "read", "write", "edit", "apply_patch"}},
	{"group:runtime", []string{"exec", "process", "code_execution", "secrets"}},
	{"group:web", []string{"web_search", "web_fetch", "x_search"}},
	{"group:memory", []string{"memory_search", "memory_get"}},
	{"group:sessions", []string{
		"sessions", "sessions_list", "sessions_history", "sessions_search",
		"conversations_list", "conversations_send", "conversations_turn", "sessions_send",
		"sessions_spawn", "github_identity_status", "github_publish", "agents_wait",
		"sessions_yield", "subagents", "session_status", "suggest_task", "dismiss_task",
	}},
	{"group:ui", []string{"browser", "screen", "theme", "dashboard", "terminal", "portal", "canvas", "show_widget"}},
	{"group:messaging", []string{"message"}},
	{"group:automation", []string{"heartbeat_respond", "automations", "gateway", "plugins", "openclaw"}},
	{"group:nodes", []string{"nodes", "computer", "mobile_ui"}},
	{"group:agents", []string{"agents_list", "get_goal", "create_goal", "update_goal", "progress_card", "ask_user", "skill_workshop"}},
	{"group:media", []string{"view_image", "image_generate", "music_generate", "video_generate", "tts", "pdf"}},
}

// catalogProfiles mirrors the profile lines of the reference TSV. ProfileFull is the
// wildcard; the others are finite and may contain BundleMCP.
var catalogProfiles = map[string][]string{
	ProfileMinimal: {"session_status", "gateway"},
	ProfileCoding: {
		"ls", "read", "write", "edit", "apply_patch", "exec", "process", "code_execution",
		"secrets", "web_search", "web_fetch", "x_search", "memory_search", "memory_get",
		"sessions", "sessions_list", "sessions_history", "sessions_search",
		"conversations_list", "conversations_send", "conversations_turn", "sessions_send",
		"sessions_spawn", "github_identity_status", "github_publish", "agents_wait",
		"sessions_yield", "subagents", "session_status", "suggest_task", "dismiss_task",
		"screen", "theme", "dashboard", "terminal", "portal", "automations", "gateway",
		"plugins", "get_goal", "create_goal", "update_goal", "progress_card", "ask_user",
		"skill_workshop", "view_image", "image_generate", "music_generate",
		"video_generate", BundleMCP,
	},
	ProfileMessaging: {
		"secrets", "sessions", "sessions_list", "sessions_history", "sessions_search",
		"conversations_list", "conversations_send", "conversations_turn", "sessions_send",
		"sessions_spawn", "sessions_yield", "subagents", "session_status", "theme",
		"message", "gateway", "ask_user", BundleMCP,
	},
	ProfileFull: {Wildcard},
}

// aliases maps legacy or alternate spellings to canonical ids, as OpenClaw does
// before matching, so a policy written with "bash" still governs "exec".
var aliases = map[string]string{
	"bash":        "exec",
	"apply-patch": "apply_patch",
	"cron":        "automations",
}

// Lookup tables derived once from the literals above; read-only afterwards.
var (
	groupIndex   = buildGroupIndex()
	coreToolSet  = buildCoreToolSet()
	coreToolList = sortedKeys(coreToolSet)
	profileSets  = buildProfileSets()
)

func buildGroupIndex() map[string][]string {
	m := make(map[string][]string, len(catalogGroups))
	for _, g := range catalogGroups {
		m[g.name] = g.members
	}
	return m
}

// buildCoreToolSet takes the union of every group: the catalog defines a core tool
// as a member of some section, which is why profile-only entries such as BundleMCP
// are excluded.
func buildCoreToolSet() map[string]struct{} {
	m := make(map[string]struct{})
	for _, g := range catalogGroups {
		for _, id := range g.members {
			m[id] = struct{}{}
		}
	}
	return m
}

func buildProfileSets() map[string]map[string]struct{} {
	m := make(map[string]map[string]struct{}, len(catalogProfiles))
	for name, members := range catalogProfiles {
		set := make(map[string]struct{}, len(members))
		for _, id := range members {
			set[id] = struct{}{}
		}
		m[name] = set
	}
	return m
}

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Normalize returns the canonical spelling of a tool, group or profile name: trimmed,
// lower-cased and with aliases resolved ("bash" → "exec", "apply-patch" →
// "apply_patch", "cron" → "automations"). Policies are compared only after this
// step so that spelling can never bypass a deny.
func Normalize(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if canonical, ok := aliases[n]; ok {
		return canonical
	}
	return n
}

// IsCoreTool reports whether id is a known core tool id in canonical form. It does
// not normalize: callers that accept user spelling should call Normalize first,
// while validation wants "BASH" to be rejected as non-canonical.
func IsCoreTool(id string) bool {
	_, ok := coreToolSet[id]
	return ok
}

// CoreToolIDs returns every known core tool id, sorted. The slice is a fresh copy
// the caller may modify.
func CoreToolIDs() []string {
	return slices.Clone(coreToolList)
}

// GroupNames returns every known group name ("group:fs", …) in catalog order.
func GroupNames() []string {
	out := make([]string, len(catalogGroups))
	for i, g := range catalogGroups {
		out[i] = g.name
	}
	return out
}

// ExpandGroup returns the members of a group in catalog order. The name is
// normalized first, so " Group:FS " works. It returns false for anything that is not
// a known group, including unknown "group:" names, which callers must keep as
// unknown entries rather than drop.
func ExpandGroup(name string) ([]string, bool) {
	members, ok := groupIndex[Normalize(name)]
	if !ok {
		return nil, false
	}
	return slices.Clone(members), true
}

// ExpandNames normalizes each name, replaces known groups by their members, keeps
// Wildcard and unknown names (including unknown "group:" names) verbatim, drops
// blank entries (they name no tool) and removes duplicates, keeping first-seen
// order. Unknown names stay visible because the safe-deny rule must see them to
// fail closed. A nil or empty input yields an empty, non-nil slice.
func ExpandNames(names []string) []string {
	out := make([]string, 0, len(names))
	seen := make(map[string]struct{}, len(names))
	add := func(n string) {
		if _, dup := seen[n]; dup {
			return
		}
		seen[n] = struct{}{}
		out = append(out, n)
	}
	for _, raw := range names {
		n := Normalize(raw)
		if n == "" {
			continue
		}
		if members, ok := groupIndex[n]; ok {
			for _, m := range members {
				add(m)
			}
			continue
		}
		add(n)
	}
	return out
}

// ProfileNames returns the known profile names, sorted.
func ProfileNames() []string {
	out := make([]string, 0, len(catalogProfiles))
	for name := range catalogProfiles {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// ProfileMembers returns a copy of a profile's allow list as written in the catalog
// (ProfileFull is []string{"*"}). The name is normalized; an empty name is
// ProfileFull. It returns false for an unknown profile.
func ProfileMembers(profile string) ([]string, bool) {
	members, ok := catalogProfiles[effectiveProfile(profile)]
	if !ok {
		return nil, false
	}
	return slices.Clone(members), true
}

// ProfileAllows reports whether the profile admits tool. Both names are normalized;
// an empty profile means no narrowing (ProfileFull), which admits everything. An
// unknown profile returns an error wrapping ErrUnknownProfile, because guessing
// would let a typo widen or narrow tools silently.
func ProfileAllows(profile, tool string) (bool, error) {
	name := effectiveProfile(profile)
	set, ok := profileSets[name]
	if !ok {
		return false, fmt.Errorf("%w %q", ErrUnknownProfile, name)
	}
	if _, all := set[Wildcard]; all {
		return true, nil
	}
	_, ok = set[Normalize(tool)]
	return ok, nil
}

// effectiveProfile normalizes a profile name and maps the empty name to ProfileFull.
func effectiveProfile(profile string) string {
	if p := Normalize(profile); p != "" {
		return p
	}
	return ProfileFull
}
