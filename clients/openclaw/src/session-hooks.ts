// The harness's side of an OpenClaw session's life on the cluster: before a
// turn its AgentSession is created or found and given the attempt's model;
// OpenClaw's reset hook bumps the AgentSession's resetGeneration; OpenClaw's
// session deletion deletes it.
import {
  AgentHarnessPreflightError,
  type AgentHarnessAttemptParamsV2,
  type AgentHarnessV2,
} from "openclaw/plugin-sdk/agent-harness-runtime";

import { SessionModelRefusedError, type SessionStore, sessionModel } from "./sessions.js";

export type Logger = { warn(message: string): void; debug?(message: string): void };

// kubectl harness session create's --agent default, and OpenClaw's default agent.
const DEFAULT_AGENT_ID = "main";

/**
 * Creates or finds the attempt's AgentSession and gives it the attempt's
 * model (and OpenClaw's model lock, modelSelectionLocked). Nothing ran
 * either way. A model the session cannot take (Locked, or refused by the
 * API server) is a preflight error with scope "harness": every other model
 * on this harness meets the same session, while a candidate of another
 * runtime does not. Any other failure has no scope: no other runtime may
 * take a turn the cluster's policy could not be asked about.
 */
export async function ensureSession(
  sessions: SessionStore,
  params: Pick<AgentHarnessAttemptParamsV2, "agentId" | "sessionKey" | "sessionId" | "provider" | "modelId" | "modelSelectionLocked">,
): Promise<void> {
  try {
    if (params.sessionKey === undefined || params.sessionKey === "") {
      throw new Error("the attempt has no sessionKey, which an AgentSession requires (spec.sessionKey)");
    }
    const id = { agentId: params.agentId ?? DEFAULT_AGENT_ID, sessionKey: params.sessionKey, sessionId: params.sessionId };
    await sessions.ensure(id, { model: sessionModel(params.provider, params.modelId), locked: params.modelSelectionLocked === true });
  } catch (err) {
    const message = (err as Error).message;
    if (err instanceof SessionModelRefusedError) {
      throw new AgentHarnessPreflightError(`harness-operator could not give the session's AgentSession this model: ${message}`, {
        userMessage: `The cluster session cannot run this model: ${message}`,
        cause: err,
        scope: "harness",
      });
    }
    throw new AgentHarnessPreflightError(`harness-operator could not create or find the session's AgentSession: ${message}`, {
      userMessage: `The cluster session could not be prepared: ${message}`,
      cause: err,
    });
  }
}

/**
 * Runs one of OpenClaw's session mutations (deletion, a history cut) and
 * reports whether it committed: the native side is released only then.
 */
export async function runMutation<T>(run: (tx: { commit(): void; rollback(): void }) => Promise<T>): Promise<{ result: T; committed: boolean }> {
  let committed = false;
  const result = await run({
    commit: () => {
      committed = true;
    },
    rollback: () => {
      committed = false;
    },
  });
  return { result, committed };
}

/** The harness's reset and session-deletion hooks over the AgentSessions. */
export function sessionHooks(sessions: SessionStore, log: Logger): Pick<AgentHarnessV2, "reset" | "withSessionDeletion"> {
  return {
    async reset(params) {
      // Compaction keeps the conversation: the native thread keeps its
      // context (the SDK: "preserve compaction"). Every other reason starts over.
      if (params.sessionId === undefined || params.reason === "compaction") return;
      const id: Parameters<SessionStore["reset"]>[0] = { sessionId: params.sessionId };
      if (params.agentId !== undefined) id.agentId = params.agentId;
      if (params.sessionKey !== undefined) id.sessionKey = params.sessionKey;
      await sessions.reset(id);
    },
    async withSessionDeletion(params, run) {
      const { result, committed } = await runMutation(run);
      // The SDK: "release native resources after its commit completes". The
      // OpenClaw session is gone by now; a failure here leaves an orphaned
      // AgentSession to delete by hand, and is reported, not thrown.
      if (committed) {
        await sessions
          .delete({ agentId: params.agentId, sessionKey: params.sessionKey, sessionId: params.sessionId })
          .catch((err: unknown) => log.warn(`harness-operator: the AgentSession of deleted session ${params.sessionId} was not deleted: ${(err as Error).message}`));
      }
      return result;
    },
  };
}
