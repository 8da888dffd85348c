// Package wire is the dispatcher API's contract: what crosses the API
// between the gateway (or kubectl-harness) and the dispatcher, in one
// package below both sides. It owns
//
//   - the error shape (Error, Scope; docs/dispatcher-api.md, "Errors") and
//     the one code table (ErrorCode: the turn's codes and the API's own,
//     with HTTP status and
//     retryability), with the constructors of the errors more than one
//     package returns (RunIDConflict, OutcomeUnknown);
//   - the turn request (TurnRequest: the Attempt, flat, plus the turn-only
//     fields, its Images and HostTools) with its limits (MaxRunIDLength,
//     MaxTurnTimeout, MaxToolTimeout), its strict decoder (DecodeStrict,
//     DecodeTurnRequest, DecodeAttempt: every refusal a FieldError naming
//     the JSON path), its shape checks (Validate) and the journal's request
//     Digest;
//   - the stream: every event name (one const block: selected, partial,
//     agent_event, tool_call, tool_terminal, transcript, result, error;
//     media beside its payload) and every payload — Decision (SelectedEvent
//     as the API streams it, with runId and turnToken), Partial,
//     AgentEvent, ToolCall, ToolTerminal, TranscriptRecord, NativeMedia,
//     ResultEvent (the TurnResult plus the engine's fields), Error;
//   - the host tools' answer: ToolResultRequest, ToolAnswer, ToolContent.
//
// It holds data and the checks that are purely about the wire shape;
// deciding (selection), running (adapter, dispatch) and serving
// (httpapi) stay in their packages. It imports nothing of this module
// but api/v1alpha1.
package wire
