// OpenClaw's withSessionContextReset: a history cut of a session that keeps
// its key (a message edited or rewound: OpenClaw's message-cut mutation)
// must retire the native context, and only once the cut commits. The
// cluster's native context is the AgentSession's thread, so after the commit
// the AgentSession's resetGeneration is bumped (its next turn starts a new
// thread), and the session's transcript marker is rewound to the beginning
// of OpenClaw's transcript: that next turn sends the history OpenClaw kept
// as its gatewayTranscript, which the new thread starts with (the
// dispatcher's "a session without a thread … starts one that carries them
// alone"), newest first within the dispatcher's bounds (256 messages,
// 512 KiB). A compaction is not a cut and never comes here.
import type { AgentHarnessV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import { type Logger, runMutation } from "./session-hooks.js";
import type { SessionStore } from "./sessions.js";
import type { MarkerStore } from "./transcript-marker.js";

type Hook = NonNullable<AgentHarnessV2["withSessionContextReset"]>;

export function sessionContextReset(sessions: Pick<SessionStore, "reset">, markers: MarkerStore, log: Logger): { withSessionContextReset: Hook } {
  const withSessionContextReset: Hook = async (params, run) => {
    const { result, committed } = await runMutation(run);
    if (!committed) return result;
    // The predecessor of an interrupted compaction may still hold the
    // conversation's native thread (the SDK's previousSessionId).
    const ids = params.previousSessionId === undefined ? [params.sessionId] : [params.sessionId, params.previousSessionId];
    for (const sessionId of ids) {
      // The cut has committed: a failure here is reported, not thrown into
      // OpenClaw's finished mutation. The thread then still holds the cut
      // messages until the session is reset.
      await retire(sessions, markers, { agentId: params.agentId, sessionKey: params.sessionKey, sessionId }).catch((err: unknown) => {
        log.warn(`harness-operator: the native context of session ${sessionId} was not reset after its history was cut: ${(err as Error).message}`);
      });
    }
    return result;
  };
  return { withSessionContextReset };
}

async function retire(sessions: Pick<SessionStore, "reset">, markers: MarkerStore, id: { agentId: string; sessionKey: string; sessionId: string }): Promise<void> {
  if (!(await sessions.reset(id))) return; // never ran on the cluster: no native context
  const marker = await markers.lookup(id.sessionId);
  // Without a marker (state lost) the new thread starts empty, as after any reset.
  if (marker !== undefined) await markers.register(id.sessionId, { afterRunId: marker.afterRunId, sinceMs: 0, ownDigests: [] });
}
