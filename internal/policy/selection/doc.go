// Package selection is the runtime-selection engine: a pure function from a
// snapshot (visible AgentHarnesses with their conditions, the RuntimePolicies
// selecting the namespace, the AgentSession) and a prepared wire.Attempt to a
// wire.Decision — which runtime runs the turn and why, or the typed error that fails
// it closed (docs/design/contract-rules.md; the error codes are
// docs/dispatcher-api.md's "Errors"; the harness SDK's "Selection policy").
//
// Select applies the rules in this order:
//
//  1. The session is authoritative: an attempt that contradicts it is a
//     SessionMismatch, decided before anything else.
//  2. Runtime id: pin > session override > policy > auto. The pin is the
//     session's persisted harness (SessionPin) only while the session is
//     model-locked, as OpenClaw hands it to selection
//     (resolveSessionPinnedHarnessId); an unlocked session's pin takes no
//     part. Without a session, the attempt's agentHarnessId is the pin
//     (OpenClaw sends one only for a locked session). While route facts are
//     pending the pinned harness is used without a support check; with
//     route facts it must support every route, as an explicit harness
//     does. A pin of `auto` is no pin and sets the override aside (OpenClaw's
//     pin ?? override). Policy is ResolvePolicy (OpenClaw's order: model
//     entries > catalog row > provider/* entries > provider-wide; oldest
//     policy wins a conflict, a Deny policy enforces). A pin or override
//     that contradicts a Deny policy is OverrideDenied. A pin made stale by
//     a reset counts as none.
//  3. The id decides the mode: `openclaw` is forced_openclaw; a CLI backend
//     alias for the provider passes through to openclaw; `auto` asks every
//     admitted harness (for provider openai: implicit codex on the official
//     Responses routes only, never without route facts); any other id must
//     be a registered harness.
//  4. Each route of the attempt is decided on its own against the harness's
//     support facts (provider, request-transport overrides, route policy,
//     prepared auth; an omitted support block means AdapterDefaults). An
//     unsupported explicit harness falls back to openclaw only when it declared
//     the lossless fallback. Any fail-closed route fails the set; routes that
//     disagree run the set on openclaw.
//  5. The harness that runs the set is checked last: below its version floor
//     (VersionBelowFloor), then the tool-policy gate (ToolPolicyUnenforceable
//     unless it declares Exact), then readiness (HarnessUnavailable, retryable;
//     never a fallback).
//
// Every visible harness appears among the candidates with its support result.
// Only errors every model on the harness would get carry scope `harness`
// (below the floor, tool policy without Exact, unavailable); a route or
// provider the harness does not support (HarnessUnsupported) carries none.
//
// The attempt and the decision are shapes of the dispatcher API: their types
// (wire.Attempt, wire.Decision, wire.Error) are package wire's; this package
// decides.
package selection
