// The dispatcher's error answer as this plugin carries it. Kept apart from
// errors.ts, which loads OpenClaw's runtime SDK (seconds), so that the
// transport needs only node's own modules.

/** The dispatcher's error body and a stream `error` event's payload (wire.Error). */
export type WireError = {
  code: string;
  message: string;
  scope: string;
  retryable: boolean;
  replaySafe?: boolean;
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
