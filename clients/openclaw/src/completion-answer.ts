// The dispatcher's answer to an isolated completion or a settled-turn
// finalization (wire.CompletionResponse) as the one assistant message
// OpenClaw accepts: only terminal text (and the model's reasoning as
// thinking), a stop or length finish, never a tool call. The answer is read
// as untrusted JSON: a field this plugin does not know, a missing or blank
// text, or another finish reason is refused here, so a newer dispatcher that
// returned more (a tool call, delivery state) fails closed instead of being
// passed on as a plain answer.
import { AgentHarnessPreflightError, type AgentHarnessAttemptResult, type NormalizedUsage } from "openclaw/plugin-sdk/agent-harness-runtime";

import { DispatcherError } from "./dispatcher-error.js";
import { preflightError } from "./errors.js";
import type * as wire from "./wire.js";

type Result = Extract<AgentHarnessAttemptResult, { terminal: unknown }>;
export type AssistantMessage = NonNullable<Result["lastAssistant"]>;
type Usage = AssistantMessage["usage"];

/** The route the assistant message names (provider, model, transport api). */
export type AnswerRoute = { api: string; provider: string; model: string };

/** An answer the plugin refuses to hand OpenClaw: the operation fails closed. */
export class CompletionAnswerError extends Error {
  constructor(operation: string, reason: string) {
    super(`harness-operator ${operation}: the dispatcher's answer was refused: ${reason}`);
    this.name = "CompletionAnswerError";
  }
}

// wire.CompletionResult's fields, and the response's: anything else fails closed.
const RESULT_FIELDS: ReadonlySet<string> = new Set<keyof wire.CompletionResult>(["harnessId", "text", "reasoning", "finishReason", "usage"]);
const RESPONSE_FIELDS: ReadonlySet<string> = new Set<keyof wire.CompletionResponse>(["decision", "result"]);

export type Answer = { assistant: AssistantMessage; usage: NormalizedUsage; harnessId: string };

/**
 * The assistant message of a completion response. finishReasons are the
 * finishes the caller accepts (a finalization only "stop"; an isolated
 * completion "stop" or "length").
 */
export function completionAnswer(
  operation: string,
  response: unknown,
  route: AnswerRoute,
  finishReasons: ReadonlyArray<wire.FinishReason>,
  nowMs: number,
): Answer {
  const refuse = (reason: string): never => {
    throw new CompletionAnswerError(operation, reason);
  };
  const body = objectOf(response) ?? refuse("the response is not a JSON object");
  const extra = Object.keys(body).find((k) => !RESPONSE_FIELDS.has(k));
  if (extra !== undefined) refuse(`unknown response field ${JSON.stringify(extra)}`);
  const result = objectOf(body["result"]) ?? refuse("it has no result");
  const unknown = Object.keys(result).find((k) => !RESULT_FIELDS.has(k));
  if (unknown !== undefined) refuse(`unknown result field ${JSON.stringify(unknown)}`);
  const text = result["text"];
  if (typeof text !== "string" || text.trim() === "") refuse("the answer is empty");
  const finish = result["finishReason"];
  if (typeof finish !== "string" || !(finishReasons as readonly string[]).includes(finish)) {
    refuse(`finishReason ${JSON.stringify(finish)} is not ${finishReasons.map((f) => JSON.stringify(f)).join(" or ")}`);
  }
  const harnessId = result["harnessId"];
  if (typeof harnessId !== "string" || harnessId === "") refuse("it names no harnessId");
  const reasoning = result["reasoning"];
  if (reasoning !== undefined && typeof reasoning !== "string") refuse("reasoning is not a string");
  const content: AssistantMessage["content"] = [];
  if (typeof reasoning === "string" && reasoning !== "") content.push({ type: "thinking", thinking: reasoning });
  content.push({ type: "text", text: text as string });
  const usage = usageOf(objectOf(result["usage"]));
  return {
    assistant: {
      role: "assistant",
      content,
      api: route.api,
      provider: route.provider,
      model: route.model,
      usage,
      stopReason: finish as wire.FinishReason,
      timestamp: nowMs,
    },
    usage: normalized(usage),
    harnessId: harnessId as string,
  };
}

function objectOf(v: unknown): Record<string, unknown> | undefined {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function count(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : 0;
}

// The call's usage as OpenClaw counts it; the dispatcher reports neither
// cache writes nor cost.
function usageOf(u: Record<string, unknown> | undefined): Usage {
  const input = count(u?.["input"]);
  const output = count(u?.["output"]);
  const cacheRead = count(u?.["cachedInput"]);
  const total = u?.["total"] === undefined ? input + output + cacheRead : count(u["total"]);
  return {
    input,
    output,
    cacheRead,
    cacheWrite: 0,
    totalTokens: total,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    contextUsage: { state: "unavailable" },
  };
}

function normalized(u: Usage): NormalizedUsage {
  return { input: u.input, output: u.output, cacheRead: u.cacheRead, total: u.totalTokens };
}

/**
 * The error a completion or finalization request that got no answer throws.
 * A dispatcher refusal goes through errors.ts's table (its user message, and
 * scope "harness" only where the table and the dispatcher both allow it);
 * a request that got no answer fails closed without scope. Either way
 * nothing is retried here: OpenClaw calls these once and never replays them
 * through another runtime.
 */
export function completionFailure(operation: string, err: unknown): Error {
  if (err instanceof DispatcherError) {
    const table = preflightError(err.wire);
    const options: ConstructorParameters<typeof AgentHarnessPreflightError>[1] = { cause: err };
    if (table.userMessage !== undefined) options.userMessage = table.userMessage;
    if (table.scope !== undefined) options.scope = table.scope;
    return new AgentHarnessPreflightError(`harness-operator ${operation}: the dispatcher refused it: ${err.wire.code}: ${err.wire.message}`, options);
  }
  return new Error(`harness-operator ${operation}: no answer from the dispatcher: ${(err as Error).message}`, { cause: err });
}
