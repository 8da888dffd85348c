package adapter

import (
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Classify applies rule 8: only a completed turn (kind ok) without visible
// assistant text is classified — planning-only when the runtime produced
// explicit plan text, else reasoning-only when it produced reasoning text,
// else empty. Any non-blank assistant text is visible, the intentional
// silent reply NO_REPLY included, so such a turn stays unclassified. Plan
// text is never inferred from assistant prose.
func Classify(kind wire.TerminalKind, assistantTexts []string, planText, reasoningText string) wire.Classification {
	if kind != wire.TerminalOK {
		return ""
	}
	for _, t := range assistantTexts {
		if strings.TrimSpace(t) != "" {
			return ""
		}
	}
	switch {
	case strings.TrimSpace(planText) != "":
		return wire.ClassPlanningOnly
	case strings.TrimSpace(reasoningText) != "":
		return wire.ClassReasoningOnly
	default:
		return wire.ClassEmpty
	}
}
