package v1alpha1

// RuntimeID names the runtime that executes a turn: `auto`, `openclaw` (the
// gateway's embedded runtime), a harness id such as `codex`, or a CLI backend
// alias (`claude-cli`, `google-gemini-cli`). Stored ids are normalized:
// lowercase, trimmed, and never an alias (`pi` is written `openclaw`,
// `codex-app-server` is written `codex`, `default` is written `auto`).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([a-z0-9-]*[a-z0-9])?$')",message="runtime id must be a lowercase id of letters, digits and '-' (e.g. auto, openclaw, codex)"
// +kubebuilder:validation:XValidation:rule="!(self in ['pi', 'codex-app-server', 'default'])",message="runtime id must be in normalized form: write openclaw for pi, codex for codex-app-server, auto for default"
type RuntimeID string

// Well-known runtime ids.
const (
	// RuntimeAuto asks the registered harnesses, falling back to the embedded runtime.
	RuntimeAuto RuntimeID = "auto"
	// RuntimeOpenClaw is the gateway's embedded runtime.
	RuntimeOpenClaw RuntimeID = "openclaw"
	// RuntimeCodex is the harness id of the bundled Codex harness.
	RuntimeCodex RuntimeID = "codex"
)

// ProviderID names a model provider, such as `openai` or `anthropic`.
// Provider ids compare case-insensitively and are stored in lowercase.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$')",message="provider id must be lowercase letters, digits, '.', '_' or '-' (e.g. openai)"
type ProviderID string

// ToolID is a canonical OpenClaw core tool id, such as `exec` or `apply_patch`.
// Wildcards and `group:` entries are not tool ids.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z][a-z0-9_]*$')",message="tool id must be a canonical core tool id (lowercase letters, digits and '_'); wildcards and group: entries are not allowed"
type ToolID string

// SecretKeyReference points at one key of a Secret in the object's namespace.
type SecretKeyReference struct {
	// name is the name of the Secret, in the namespace of the object that refers to it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// key is the key within the Secret's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// RuntimeArtifact identifies the exact implementation that serves turns.
type RuntimeArtifact struct {
	// id is a stable identity of the runtime artifact (for a managed server,
	// the image digest together with the handshake version).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	ID string `json:"id"`

	// fingerprint is a content fingerprint of the artifact (a digest).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Fingerprint string `json:"fingerprint"`
}
