// The dispatcher's error answer as this plugin carries it. Kept apart from
// errors.ts, which loads OpenClaw's runtime SDK (seconds), so that the
// transport needs only node's own modules.
import type * as wire from "./wire.js";

/**
 * The dispatcher's error body and a stream `error` event's payload
 * (wire.Error). Code and scope stay open strings: a newer dispatcher may
 * send a code this plugin does not know, and an answer that is not the
 * dispatcher's gets the code HTTP<status>.
 */
export type WireError = Omit<wire.Error, "code" | "scope"> & {
  code: wire.ErrorCode | (string & {});
  scope: wire.Scope | (string & {});
};

/**
 * A dispatcher answer that was an error. status is absent for a stream
 * `error`; retryAfterSeconds is the answer's Retry-After, absent when it had
 * none in seconds.
 */
export class DispatcherError extends Error {
  constructor(
    readonly wire: WireError,
    readonly status?: number,
    readonly retryAfterSeconds?: number,
  ) {
    super(`harness-operator dispatcher: ${wire.code}: ${wire.message}`);
    this.name = "DispatcherError";
  }
}
