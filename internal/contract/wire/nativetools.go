package wire

// The canonical OpenClaw tool ids of the tools Codex runs natively on the
// cluster: the names the stream reports for a native tool's tool_terminal
// and agent events (the Codex adapter's relay sets them from these), and
// Codex's other native tools under the names OpenClaw's own Codex harness
// gives them. Codex hands a native tool's output to its model directly, so
// nothing on the gateway (an OpenClaw tool-result middleware) runs on it:
// the OpenClaw plugin refuses an attempt whose "codex" middleware names one
// of them. make generate-wire emits them, in this order, as the plugin's
// NativeToolIds. A native MCP tool is reported as `<server>__<tool>`, a
// shape rather than a name, so it is not listed here.
const (
	// NativeToolExec: Codex's shell (exec_command; a commandExecution item).
	NativeToolExec = "exec"
	// NativeToolProcess: Codex's write_stdin to a running command.
	NativeToolProcess = "process"
	// NativeToolApplyPatch: Codex's file edits (a fileChange item).
	NativeToolApplyPatch = "apply_patch"
	// NativeToolWebSearch: Codex's web search (a webSearch item).
	NativeToolWebSearch = "web_search"
	// NativeToolViewImage: Codex's view_image (an imageView item).
	NativeToolViewImage = "view_image"
	// NativeToolImageGenerate: Codex's image generation (an imageGeneration
	// item).
	NativeToolImageGenerate = "image_generate"
	// NativeToolCodeExecution: Codex's code mode.
	NativeToolCodeExecution = "code_execution"
	// NativeToolSpawnAgent: Codex's sub-agents.
	NativeToolSpawnAgent = "spawn_agent"
)
