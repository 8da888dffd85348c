// Package codexconfig holds the Codex configuration the project ships and
// tests with, so that what the tests run offline is what the Codex image
// ships.
package codexconfig

// Offline is a Codex config layer (TOML) that keeps Codex from reaching the
// network on its own: no update check at start-up, no analytics, and every
// feature that talks to a service of its own (plugins, apps, remote plugins,
// tool suggestions, image generation, browser and computer use, model
// discovery, goals) off. It begins with top-level keys and ends inside its
// last table, so it goes before a config's own tables. The Codex image's
// /etc/codex/config.toml is exactly this (hack/images); the tests' isolated
// CODEX_HOME includes it (internal/codextest).
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
