// Package adapter is the boundary between the turn engine and a native agent
// runtime.
//
// An adapter executes ONE prepared turn on ONE native runtime that the engine
// has already chosen and connected to (docs/architecture.md, "The path of a
// turn"). The engine owns
// everything around the turn: the session lease, selection, the journal, the
// choice of server and the AgentSession status. The adapter owns what only it
// can do for the runtime it speaks:
//
//   - the native thread: start one, or resume the session's thread, with the
//     model, working directory, developer instructions, reasoning effort and
//     the host tools of this turn;
//   - tool-policy enforcement at execution (docs/design/contract-rules.md,
//     rule 6): isolate the
//     native tool surface of a restricted turn or fail closed before the
//     thread starts, refuse calls to tools this turn did not offer, deny
//     safe-denied tools;
//   - the turn's events, relayed in order in the engine's stream vocabulary
//     (Event: partial, agent_event, tool_call, tool_terminal, transcript),
//     host tool calls answered through the engine (Hooks.AnswerTool), and
//     approval and user-input requests declined visibly (rule 9);
//   - the result (wire.TurnResult): assistant texts, the terminal outcome,
//     the classification of a completed turn without visible text (rule 8),
//     usage, the last tool error and tool media.
//
// This package holds the runtime-neutral interface (TurnInput, Hooks, the
// Event envelope, Classify); the event payloads and the result are the
// dispatcher API's, package wire's. Each adapter lives in a sub-package
// (codex: the codex-app-server adapter, the first one).
package adapter
