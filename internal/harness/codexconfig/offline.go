// Package codexconfig holds the Codex configuration the project ships and
// tests with, so that what the tests run offline is what the Codex image
// ships.
package codexconfig

import (
	"fmt"
	"strings"
)

// Offline is a Codex config layer (TOML) that keeps Codex from reaching the
// network on its own: no update check at start-up, no analytics, and every
// feature that talks to a service of its own (plugins, apps, remote plugins,
// tool suggestions, image generation, browser and computer use, model
// discovery, goals) off. It begins with top-level keys and ends inside its
// last table, so it goes before a config's own tables. The Codex image's
// /etc/codex/config.toml is exactly this (hack/images); the tests' isolated
// CODEX_HOME includes it (internal/testutil/codextest).
const Offline = `check_for_update_on_startup = false

[analytics]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false
tool_suggest = false
plugin_sharing = false
image_generation = false
browser_use = false
browser_use_external = false
computer_use = false
in_app_browser = false
api_key_model_discovery = false
goals = false
`

// ToolEnvironmentArgs are the `codex app-server` options that keep
// credentials out of the environment of the processes a session's tools run
// (shell commands): Codex's default excludes, which drop every variable whose
// name contains KEY, SECRET or TOKEN (OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY,
// GITHUB_TOKEN), are turned on (Codex 0.169 ignores them by default), and the named
// variables (a harness's Secret-backed env) are excluded as well. Other
// variables still reach the tools. The names are quoted as TOML strings, so
// a name cannot inject configuration.
func ToolEnvironmentArgs(secretEnv []string) []string {
	args := []string{"-c", "shell_environment_policy.ignore_default_excludes=false"}
	if len(secretEnv) == 0 {
		return args
	}
	quoted := make([]string, len(secretEnv))
	for i, name := range secretEnv {
		quoted[i] = tomlString(name)
	}
	return append(args, "-c", "shell_environment_policy.exclude=["+strings.Join(quoted, ",")+"]")
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
