// The turn's collaborationMode: "plan" when the OpenClaw session is in plan
// mode (plan-mode.ts: `/plan on`), nothing otherwise (the dispatcher's
// default mode). The plugin's entry hands over the store of the sessions'
// modes at registration (readPlanModesFrom); before that (a test, a plugin
// inspection) no session has a mode.
import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { PlanModeStore } from "./plan-mode.js";
import type * as wire from "./wire.js";

let modes: Pick<PlanModeStore, "read"> | undefined;

/** Reads sessions' modes from store from now on; returns what restores the previous store. */
export function readPlanModesFrom(store: Pick<PlanModeStore, "read"> | undefined): () => void {
  const previous = modes;
  modes = store;
  return () => {
    modes = previous;
  };
}

/**
 * The turn's collaboration mode field for the attempt's session. A mode
 * that cannot be read refuses the attempt (no scope: OpenClaw runs it
 * nowhere else): a plan-mode session's turn run in the default mode would
 * let Codex act where the user asked for a plan.
 */
export function collaborationModeFields(p: { sessionKey?: string | undefined }): Pick<wire.TurnRequest, "collaborationMode"> {
  if (modes === undefined || p.sessionKey === undefined || p.sessionKey === "") return {};
  let mode;
  try {
    mode = modes.read(p.sessionKey);
  } catch (err) {
    throw new AgentHarnessPreflightError(`harness-operator: the plan mode of session ${p.sessionKey} cannot be read, so the turn was not run: ${(err as Error).message}`, {
      userMessage: "This session's plan mode cannot be read, so the turn was not run. /plan off or /plan on sets it again.",
    });
  }
  return mode === "plan" ? { collaborationMode: "plan" } : {};
}
