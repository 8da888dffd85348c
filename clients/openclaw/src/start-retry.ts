// Sending a turn again that the dispatcher refused before claiming it.
// A refusal is an HTTP error status instead of a stream: nothing ran and
// nothing was journaled, so when the dispatcher says the same request may
// succeed later (`retryable`) and when (`Retry-After`), the same body — the
// same runId, the dispatcher's idempotency key — is posted again after that
// wait (docs/dispatcher-api.md, "Gateway guidance"). Bounded three ways, each
// failing the attempt at once with the last refusal rather than waiting for
// nothing: a Retry-After longer than maxWaitSeconds, a refusal after
// maxRetries retries, and a wait that would end after the attempt's timeout.
// A refusal without Retry-After is not retried: the dispatcher sends it with
// every retryable refusal whose wait it knows. A turn the dispatcher claimed
// (its stream began) never comes here: its failure is the stream's.
import { setTimeout as sleep } from "node:timers/promises";

import type { RetrySettings } from "./config.js";
import { DispatcherError } from "./dispatcher-error.js";

/** The clock and the sleep of the waits: the process's, or a test's. */
export type Waiter = {
  now(): number;
  /** Resolves after ms, rejects once signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
};

export const realWaiter: Waiter = {
  now: () => performance.now(),
  sleep: (ms, signal) => sleep(ms, undefined, signal === undefined ? {} : { signal }),
};

export type RetryState = {
  /** Retries already made. */
  retries: number;
  /** Since the first post. */
  elapsedMs: number;
  /** The attempt's timeout (params.timeoutMs), when it has one. */
  timeoutMs?: number;
};

/** How long to wait before posting a refused turn again; undefined: fail now. */
export function retryWaitMs(err: unknown, state: RetryState, bounds: RetrySettings): number | undefined {
  // Only the dispatcher's HTTP refusal: an unreachable dispatcher or a
  // proxy's answer says nothing about when to come back.
  if (!(err instanceof DispatcherError) || err.status === undefined || !err.wire.retryable) return undefined;
  const seconds = err.retryAfterSeconds;
  if (seconds === undefined || seconds > bounds.maxWaitSeconds || state.retries >= bounds.maxRetries) return undefined;
  const ms = seconds * 1000;
  if (state.timeoutMs !== undefined && state.elapsedMs + ms > state.timeoutMs) return undefined;
  return ms;
}

export type RetryOptions = {
  bounds: RetrySettings;
  waiter: Waiter;
  /** OpenClaw's abort: a wait it interrupts fails the attempt with the refusal it waited out. */
  signal?: AbortSignal | undefined;
  timeoutMs?: number | undefined;
};

/** start(), again after each refusal retryWaitMs allows; the last refusal is thrown. */
export async function startWithRetries<T>(start: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const began = opts.waiter.now();
  const timeoutMs = opts.timeoutMs !== undefined && Number.isFinite(opts.timeoutMs) && opts.timeoutMs > 0 ? opts.timeoutMs : undefined;
  for (let retries = 0; ; retries++) {
    try {
      return await start();
    } catch (err) {
      const state: RetryState = { retries, elapsedMs: opts.waiter.now() - began };
      if (timeoutMs !== undefined) state.timeoutMs = timeoutMs;
      const wait = retryWaitMs(err, state, opts.bounds);
      if (wait === undefined || opts.signal?.aborted === true) throw err;
      try {
        await opts.waiter.sleep(wait, opts.signal);
      } catch {
        throw err;
      }
    }
  }
}
