package codexconfig

// ImageGenerationArgs are the `codex app-server` options that turn Codex's
// image tool back on (Offline turns it off), for a server the operator does
// not run (an external harness) and for tests; an AgentHarness the operator
// runs has no field for it yet (spec.appServer.args replaces the
// operator's own arguments). Codex 0.169.0 then offers the model its image
// tool (image_gen.imagegen, which Codex runs itself against its provider's
// Images API) only when the provider authenticates with a ChatGPT login
// (an auth.json from `codex login`), never with an API key. The dispatcher
// delivers each generated image as media of the turn
// (internal/dispatcher/adapter/codex, "Usage and media"); a restricted
// turn switches the tool off again for its thread (IsolationConfig).
func ImageGenerationArgs() []string {
	return []string{"-c", "features.image_generation=true"}
}
