// The answers of one attempt in flight. Each tool call, approval and
// question is answered beside the reading of the stream, not in its way:
// partial replies and agent events keep reaching OpenClaw while a host tool
// runs or a user is asked, and two tool calls of one turn run side by side.
// Their order does not matter: the dispatcher matches each answer to its
// callId or requestId.

export class PendingAnswers {
  /** Aborted once OpenClaw aborts the attempt or the answers are closed: whatever still waits gives up. */
  readonly signal: AbortSignal;
  private readonly closed = new AbortController();
  private readonly pending = new Set<Promise<void>>();
  private readonly abandoned: Promise<void>;

  /** onError hears an answer that failed (answers report their own failures as answers; this is for the rest). */
  constructor(
    abort: AbortSignal | undefined,
    private readonly onError: (err: unknown) => void,
  ) {
    this.signal = abort === undefined ? this.closed.signal : AbortSignal.any([abort, this.closed.signal]);
    // One listener for every answer, however many a turn has.
    this.abandoned = new Promise((resolve) => {
      if (this.signal.aborted) resolve();
      else this.signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }

  /** Starts one answer, given the signal it must give up on; none starts once OpenClaw aborted. */
  add(answer: (signal: AbortSignal) => Promise<void>): void {
    if (this.signal.aborted) return;
    const settled: Promise<void> = Promise.race([answer(this.signal).catch(this.onError), this.abandoned]).finally(() => {
      this.pending.delete(settled);
    });
    this.pending.add(settled);
  }

  /**
   * Cancels what still waits and returns once every answer settled or was
   * abandoned: a tool that ignores its signal runs on, unheard, rather than
   * holding the attempt's result back.
   */
  async close(): Promise<void> {
    this.closed.abort();
    await Promise.all(this.pending);
  }
}
