// The dispatcher's types (the generated wire.ts) as this plugin reads and
// sends them. What it reads is parsed JSON, never checked against the
// schema, and a dispatcher of another version may leave fields out: every
// field is optional, so the code says what it does without one. What it
// sends is narrowed to what it fills in.
import type * as wire from "./wire.js";

/** T with every field optional, all the way down. */
export type Received<T> = T extends readonly (infer E)[]
  ? Received<E>[]
  : T extends object
    ? { [K in keyof T]?: Received<T[K]> }
    : T;

export type Selected = Received<wire.SelectedEvent>;
export type Partial = Received<wire.Partial>;
export type AgentEvent = Received<wire.AgentEvent>;
export type ToolCall = Received<wire.ToolCall>;
export type ToolTerminal = Received<wire.ToolTerminal>;
/** The payload of a result event (wire.ResultEvent). */
export type TurnResult = Received<wire.ResultEvent>;
export type Terminal = Received<wire.Terminal>;
export type Usage = Received<wire.Usage>;
export type LastToolError = Received<wire.ToolError>;
export type TranscriptRecord = Received<wire.TranscriptRecord>;
export type ApprovalRequest = Received<wire.ApprovalRequest>;
/** A question of a user-input request: its id is how the answer names it, a label how it names an option. */
export type UserInputQuestion = Omit<Received<wire.UserInputQuestion>, "id" | "options"> &
  Pick<wire.UserInputQuestion, "id"> & { options?: Array<Received<wire.UserInputOption> & Pick<wire.UserInputOption, "label">> };
export type UserInputRequest = Omit<Received<wire.UserInputRequest>, "questions"> & { questions?: UserInputQuestion[] };
/** The payloads of approval_request, user_input_request and request_resolved, as the host is told of them. */
export type NativeRequest = Received<wire.ApprovalRequest | wire.UserInputRequest | wire.RequestResolved>;

export type ApprovalDecision = wire.ApprovalDecision;
export type ApprovalAnswer = wire.ApprovalAnswer;
export type UserInputAnswer = wire.UserInputAnswer;
/** The tool-results body: the dispatcher takes an answer without content (an error told by errorMessage). */
export type ToolResultRequest = Omit<wire.ToolResultRequest, "content"> & { content?: wire.ToolContent[] };
