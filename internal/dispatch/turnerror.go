package dispatch

import (
	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/adapter"
)

// ResultEvent is the payload of the `result` event.
type ResultEvent struct {
	// RunID is the turn's runId.
	RunID string `json:"runId"`
	adapter.TurnResult
	// AgentHarnessID is the harness that ran the turn.
	AgentHarnessID string `json:"agentHarnessId"`
	// RuntimeArtifact is the attested artifact of the server, when the
	// request asked for it (captureRuntimeArtifact) and the server is attested.
	RuntimeArtifact *v1alpha1.RuntimeArtifact `json:"runtimeArtifact,omitempty"`
}
