package wire

import "strconv"

// MaxTriggerLength bounds PassThrough.Trigger.
const MaxTriggerLength = 64

// PassThrough are attempt fields OpenClaw defines for harnesses that the
// operator does not act on: it accepts them, covers them by the run's
// request digest (a retry of the same runId with other values is a runId
// conflict) and hands them to the adapter unchanged (adapter.TurnInput), so
// a harness that can use them does. TurnRequest embeds it, so the JSON stays
// flat.
//
// Considered and not accepted, so still refused as unknown fields: fields
// that ask for an effect the operator does not implement and a gateway
// would wrongly believe in (disableMessageTool, forceRestartSafeTools,
// forceMessageTool: tool-surface restrictions), OpenClaw-process state with
// no JSON meaning (skillWorkshopProposalMutationBudget,
// skillWorkshopProposalEnv, hostCapabilities, observeToolTerminal) and
// provenance objects whose shape OpenClaw has not fixed (skillWorkshopOrigin).
type PassThrough struct {
	// SkillWorkshopProposalOnly marks an internal skill-workshop review run
	// limited to proposals (the harness SDK: "harnesses that forward embedded
	// attempt params should pass skillWorkshopProposalOnly through"). Such a
	// run wants the raw tool surface; the Codex adapter offers the turn's
	// host tools as given and adds no tool-search catalog of its own.
	SkillWorkshopProposalOnly bool `json:"skillWorkshopProposalOnly,omitempty"`
	// Trigger is what started the run in OpenClaw: user, heartbeat, cron,
	// memory, overflow or manual (not checked against that list, so a newer
	// gateway's value passes; at most MaxTriggerLength bytes).
	Trigger string `json:"trigger,omitempty"`
}

// Validate bounds the pass-through fields; the error is a *FieldError.
func (p PassThrough) Validate() error {
	if len(p.Trigger) > MaxTriggerLength {
		return &FieldError{Field: "trigger", Message: "must be at most " + strconv.Itoa(MaxTriggerLength) + " bytes"}
	}
	return nil
}
