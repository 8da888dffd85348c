// The one table from the dispatcher's error codes (docs/dispatcher-api.md
// "Errors", internal/contract/wire/codes.go) to the error OpenClaw sees.
//
// Two phases, decided by whether the dispatcher claimed the turn:
//   - refused before the run was journaled (an HTTP status instead of a
//     stream): nothing ran, so the attempt fails with
//     AgentHarnessPreflightError. It carries scope "harness" only when this
//     table allows it for the code AND the dispatcher itself scoped the error
//     to the harness: the harness SDK allows the scope only for a failure local to
//     the selected harness that another model on it would repeat, and the
//     dispatcher is the authority on that instance (ToolPolicyUnenforceable,
//     for example, is scoped at selection but not when it depends on the
//     model). Without the scope OpenClaw's whole fallback chain ends.
//   - failed after the run was journaled (a stream `error` event): the
//     harness claimed the turn, which may have run; it is returned as a
//     failed terminal and never retried elsewhere, whatever the code.
import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";

import { DispatcherError, type WireError } from "./dispatcher-error.js";
import type { ErrorCode } from "./wire.js";

type Row = {
  /** The refusal may carry scope "harness" (when the dispatcher scoped it too). */
  harnessScope: boolean;
  /** What the gateway's user is told (AgentHarnessPreflightError.userMessage). */
  userMessage: string;
};

const RESET = "Reset the session (/reset) to start a new one.";

/**
 * Every code the dispatcher answers with (internal/contract/wire/codes.go),
 * one row each: a code the generated ErrorCode gains fails the build here.
 */
export const ERROR_TABLE: Readonly<Record<ErrorCode, Row>> = {
  // The turn's error codes (docs/dispatcher-api.md "Errors"): selection and
  // session outcomes.
  HarnessNotRegistered: { harnessScope: false, userMessage: "The cluster has no agent harness of the runtime this session asks for." },
  HarnessUnsupported: { harnessScope: false, userMessage: "The cluster's agent harness does not support this model route." },
  VersionBelowFloor: { harnessScope: false, userMessage: "The cluster's agent harness is older than its version floor." },
  ToolPolicyUnenforceable: { harnessScope: true, userMessage: "The cluster's agent harness cannot enforce this turn's tool policy." },
  OverrideDenied: { harnessScope: false, userMessage: "The session's runtime override is denied by the cluster's runtime policy." },
  ArtifactMismatch: { harnessScope: false, userMessage: "The cluster's agent harness does not run the expected runtime artifact." },
  NativeThreadLost: { harnessScope: false, userMessage: `The cluster lost this session's native thread. ${RESET}` },
  // Scoped by the dispatcher only when the model alone differs from the
  // session's: another model on this harness meets the same session.
  SessionMismatch: { harnessScope: true, userMessage: "The turn contradicts the cluster's AgentSession for this session." },
  // The cluster decided the embedded runtime: OpenClaw's fallback runs it.
  EmbeddedRuntimeSelected: { harnessScope: true, userMessage: "The cluster runs this turn on OpenClaw's embedded runtime." },
  RunIdConflict: { harnessScope: false, userMessage: "The turn's run id was already used for another turn." },
  TranscriptLimitExceeded: { harnessScope: false, userMessage: `The session's transcript on the cluster is full. ${RESET}` },
  RunPayloadPruned: { harnessScope: false, userMessage: "The turn already ran and the cluster no longer keeps its events." },
  RetentionLimitReached: { harnessScope: false, userMessage: "The namespace holds as many runs as the cluster keeps; retry later." },
  HarnessUnavailable: { harnessScope: true, userMessage: "The cluster's agent harness is not available now; retry later." },
  HarnessAtCapacity: { harnessScope: true, userMessage: "The cluster's agent harness is at capacity; retry later." },
  AuthFailed: { harnessScope: false, userMessage: "The model provider refused the cluster harness's credential." },
  // Authentication failures stay fail-closed (the harness SDK: no fallbackRuntime
  // "for provider, route, or authentication failures").
  AuthProfileNotIsolated: { harnessScope: false, userMessage: "The cluster harness serves other namespaces, so it refuses this auth profile." },
  AuthProfileUnsupported: { harnessScope: false, userMessage: "The cluster harness cannot use this auth profile." },
  // The dispatcher API's own codes: requests the gateway got wrong or may not make.
  BadRequest: { harnessScope: false, userMessage: "The dispatcher refused the turn as invalid." },
  Unauthorized: { harnessScope: false, userMessage: "The dispatcher did not accept the gateway's token." },
  Forbidden: { harnessScope: false, userMessage: "The gateway may not run turns of this session on the cluster." },
  TurnTokenInvalid: { harnessScope: false, userMessage: "The dispatcher did not accept the turn token." },
  SessionNotFound: { harnessScope: false, userMessage: "The cluster has no AgentSession for this session." },
  RunNotFound: { harnessScope: false, userMessage: "The dispatcher does not know this run." },
  NotFound: { harnessScope: false, userMessage: "The dispatcher has no such endpoint (a wrong dispatcher URL?)." },
  MethodNotAllowed: { harnessScope: false, userMessage: "The dispatcher has no such endpoint (a wrong dispatcher URL?)." },
  NoPendingToolCall: { harnessScope: false, userMessage: "The tool call was no longer waiting for its result." },
  NoPendingRequest: { harnessScope: false, userMessage: "The request was no longer waiting for an answer." },
  RequestAlreadyResolved: { harnessScope: false, userMessage: "The request was already answered." },
  TurnNotRunning: { harnessScope: false, userMessage: "The turn was no longer running." },
  RequestTooLarge: { harnessScope: false, userMessage: "The turn is larger than the dispatcher accepts (1 MiB)." },
  InternalError: { harnessScope: false, userMessage: "The dispatcher failed." },
  AuthUnavailable: { harnessScope: false, userMessage: "The dispatcher could not check the gateway's token now; retry later." },
  RateLimited: { harnessScope: false, userMessage: "The dispatcher is limiting the gateway's requests; retry later." },
  StoreUnavailable: { harnessScope: false, userMessage: "The dispatcher's store has no space left now; retry later." },
  NoNativeThread: { harnessScope: false, userMessage: "The session has no native thread on the cluster." },
};

/**
 * The error runAttempt throws for a turn the dispatcher refused before it
 * claimed it. A code this table does not know (a newer dispatcher) fails
 * closed: no scope.
 */
export function preflightError(err: WireError): AgentHarnessPreflightError {
  const row: Row | undefined = (ERROR_TABLE as Readonly<Record<string, Row>>)[err.code];
  const options: ConstructorParameters<typeof AgentHarnessPreflightError>[1] = {
    userMessage: row?.userMessage ?? `The dispatcher refused the turn (${err.code}).`,
    cause: new DispatcherError(err),
  };
  if (row?.harnessScope === true && err.scope === "harness") options.scope = "harness";
  return new AgentHarnessPreflightError(`harness-operator dispatcher refused the turn: ${err.code}: ${err.message}`, options);
}

/** The failure of a turn the dispatcher claimed: never retried, never a preflight error. */
export function claimedFailure(err: WireError): { error: DispatcherError; replaySafe: boolean } {
  // replaySafe is absent only when no runtime was touched; false means the
  // turn may have run.
  return { error: new DispatcherError(err), replaySafe: err.replaySafe !== false };
}
