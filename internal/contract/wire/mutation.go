package wire

// Mutation classes of NativeMutation: how sure the runtime's protocol is
// that an action changed state outside the conversation.
const (
	// MutationYes: the action changes state by its nature (a native file
	// change, e.g. apply_patch).
	MutationYes = "yes"
	// MutationPossibly: the protocol cannot tell (a shell command, an MCP
	// tool call): it may have changed state.
	MutationPossibly = "possibly"
	// MutationNo: the action only reads (web search, viewing an image).
	MutationNo = "no"
)

// NativeMutation are the protocol-owned mutation and replay facts of a
// native tool's terminal outcome (the harness SDK's nativeMutation: "supply
// protocol-owned mutation and replay facts there; do not copy OpenClaw's
// mutation classifier into the harness"). They are derived from the kind of
// the runtime's item alone, never from the command text: a gateway applies
// its own classifier to the arguments if it wants a finer answer. Host tools
// carry none: their mutation facts belong to the gateway's tool definitions.
type NativeMutation struct {
	// Mutation is yes, possibly or no (the Mutation* constants): what the
	// kind of action implies.
	Mutation string `json:"mutation"`
	// MutatingAction is the conservative boolean OpenClaw's terminal
	// accumulator takes: true when the action may have changed state —
	// Mutation yes or possibly and the action started. An action stopped
	// before it began (declined) changed nothing.
	MutatingAction bool `json:"mutatingAction"`
	// ReplaySafe says the call left no side effect that replaying the turn
	// would repeat: the negation of MutatingAction (OpenClaw's meaning).
	ReplaySafe bool `json:"replaySafe"`
	// ChangedPaths are the files a native file change touched (added,
	// deleted, updated, and the destination of a move), as the runtime
	// reported them: absolute paths on the runtime's filesystem.
	ChangedPaths []string `json:"changedPaths,omitempty"`
	// ActionFingerprint identifies the action across calls: a later call
	// with the same fingerprint is the same action (the same command in the
	// same directory, a change of the same files, the same MCP tool with the
	// same arguments). Its success resolves a failure with this fingerprint
	// (TurnResult.lastToolError).
	ActionFingerprint string `json:"actionFingerprint,omitempty"`
}
