package codex

import (
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
)

// effortOrder ranks Codex reasoning efforts from least to most. Codex takes
// any non-empty string (ReasoningEffort in its protocol schema) and passes it
// to the model as reasoning.effort; its catalog advertises, per model, the
// subset the model supports (0.169.0: low … xhigh, max, ultra; none and
// minimal only for some models).
var effortOrder = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra"}

// thinkLevels maps OpenClaw thinking levels to Codex reasoning efforts.
// Empty and "adaptive" send no effort: the model's own default applies.
var thinkLevels = map[string]string{
	"":         "",
	"adaptive": "",
	"off":      "none",
	"minimal":  "minimal",
	"low":      "low",
	"medium":   "medium",
	"high":     "high",
	"xhigh":    "xhigh",
}

// ReasoningEffort maps an OpenClaw thinking level to the Codex reasoning
// effort sent as model_reasoning_effort (thread/start, thread/resume):
//
//	off → none, minimal → minimal, low → low, medium → medium,
//	high → high, xhigh → xhigh, "" and adaptive → not sent (model default).
//
// supported is the model's catalog list (ModelCatalog.Efforts); when it is
// not empty and lacks the mapped effort, the nearest supported one is used,
// preferring the lower: e.g. off on a model that supports low … ultra runs
// with low, xhigh on a model that stops at high runs with high. Models Codex
// does not know (no list) get the mapped value as is. An unknown level is an
// input error (wrapping adapter.ErrInvalidInput).
func ReasoningEffort(thinkLevel string, supported []string) (string, error) {
	effort, ok := thinkLevels[strings.ToLower(strings.TrimSpace(thinkLevel))]
	if !ok {
		return "", fmt.Errorf("%w: thinkLevel %q is not one of off, minimal, low, medium, high, xhigh, adaptive",
			adapter.ErrInvalidInput, thinkLevel)
	}
	if effort == "" || len(supported) == 0 || slices.Contains(supported, effort) {
		return effort, nil
	}
	rank := slices.Index(effortOrder, effort)
	best, bestDist := "", 0
	for _, s := range supported {
		r := slices.Index(effortOrder, s)
		if r < 0 {
			continue // an effort this adapter does not know: never chosen
		}
		d := r - rank
		if d < 0 {
			d = -d*2 - 1 // lower is preferred on a tie: distance 1 below beats 1 above
		} else {
			d *= 2
		}
		if best == "" || d < bestDist {
			best, bestDist = s, d
		}
	}
	if best == "" {
		return effort, nil
	}
	return best, nil
}
