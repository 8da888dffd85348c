package turnload

// Phase is where a running turn is, as its gateway sees it.
type Phase string

// The phases of a turn: posted and not yet claimed (no `selected` event);
// claimed; the model streaming its text; a host tool call not yet
// answered; an approval request not yet answered.
const (
	PhaseBeforeClaim     Phase = "before the claim"
	PhaseClaimed         Phase = "claimed"
	PhaseStreaming       Phase = "model streaming"
	PhaseToolPending     Phase = "host-tool call pending"
	PhaseApprovalPending Phase = "approval pending"
)

func (l *Load) setPhase(runID string, p Phase) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ended := l.outcomes[runID]; !ended {
		l.phase[runID] = p
	}
}

// Phases counts the running turns by phase.
func (l *Load) Phases() map[Phase]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[Phase]int{}
	for _, p := range l.phase {
		out[p]++
	}
	return out
}
