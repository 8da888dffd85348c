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
 * none in seconds. dispatcherBody is false for an HTTP error whose body was
 * not the dispatcher's JSON (a proxy's answer, or a wrong URL's).
 */
export class DispatcherError extends Error {
  constructor(
    readonly wire: WireError,
    readonly status?: number,
    readonly retryAfterSeconds?: number,
    readonly dispatcherBody = true,
  ) {
    super(`harness-operator dispatcher: ${wire.code}: ${wire.message}`);
    this.name = "DispatcherError";
  }
}

/**
 * A request that got no answer at all. mayHaveArrived is true once the
 * connection to the dispatcher was open: from then on the request may have
 * reached it (reset or closed after sending, a timeout, an abort), and only
 * a failure before that (refused, unresolvable, a TLS handshake that
 * failed) proves it did not.
 */
export class TransportError extends Error {
  constructor(
    message: string,
    readonly mayHaveArrived: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "TransportError";
  }
}

/**
 * Whether a failed request may still have reached the dispatcher: no
 * answer after the connection was open, or a server error that is not the
 * dispatcher's (a proxy may have forwarded the request before it failed).
 * The dispatcher's own error answers are definitive: nothing was journaled.
 */
export function outcomeUnknown(err: unknown): boolean {
  if (err instanceof TransportError) return err.mayHaveArrived;
  return err instanceof DispatcherError && err.status !== undefined && err.status >= 500 && !err.dispatcherBody;
}
