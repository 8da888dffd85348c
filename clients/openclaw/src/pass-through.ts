// The attempt fields OpenClaw defines for harnesses that forward embedded
// attempt params and the dispatcher accepts as pass-through fields
// (docs/dispatcher-api.md, "Pass-through fields"): it does not act on them,
// but they belong to the run's request and reach the cluster's runtime
// adapter unchanged. `trigger` travels in turn-request.ts with the prompt.
//
// skillWorkshopProposalOnly marks OpenClaw's internal skill-workshop review
// run, limited to proposals: the harness SDK asks a harness that forwards
// embedded attempt params to pass it through, so that such a narrow
// single-tool run stays on the raw tool surface. Only `true` is sent: false
// and absent mean the same, and the body (and so the runId) of an ordinary
// turn stays what it was.
import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import type * as wire from "./wire.js";

export type PassThroughInput = Pick<AgentHarnessAttemptParamsV2, "skillWorkshopProposalOnly">;
export type PassThroughFields = Pick<wire.TurnRequest, "skillWorkshopProposalOnly">;

/** The pass-through fields of the turn's body for this attempt. */
export function passThroughFields(p: PassThroughInput): PassThroughFields {
  return p.skillWorkshopProposalOnly === true ? { skillWorkshopProposalOnly: true } : {};
}
