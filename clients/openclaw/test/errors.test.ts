import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";

import { DispatcherError } from "../src/dispatcher-error.js";
import { ERROR_TABLE, claimedFailure, preflightError } from "../src/errors.js";

// The one row per code: what a refusal before the turn was claimed becomes,
// when the dispatcher scoped it to the harness (the widest case).
const want: Record<string, "harness" | "none"> = {
  HarnessNotRegistered: "none",
  HarnessUnsupported: "none",
  VersionBelowFloor: "none",
  ToolPolicyUnenforceable: "harness",
  OverrideDenied: "none",
  ArtifactMismatch: "none",
  NativeThreadLost: "none",
  SessionMismatch: "harness",
  EmbeddedRuntimeSelected: "harness",
  RunIdConflict: "none",
  TranscriptLimitExceeded: "none",
  RunPayloadPruned: "none",
  RetentionLimitReached: "none",
  HarnessUnavailable: "harness",
  HarnessAtCapacity: "harness",
  AuthFailed: "none",
  AuthProfileNotIsolated: "none",
  AuthProfileUnsupported: "none",
  BadRequest: "none",
  Unauthorized: "none",
  Forbidden: "none",
  TurnTokenInvalid: "none",
  SessionNotFound: "none",
  RunNotFound: "none",
  NotFound: "none",
  MethodNotAllowed: "none",
  NoPendingToolCall: "none",
  NoPendingRequest: "none",
  RequestAlreadyResolved: "none",
  TurnNotRunning: "none",
  RequestTooLarge: "none",
  InternalError: "none",
  AuthUnavailable: "none",
  RateLimited: "none",
  StoreUnavailable: "none",
  NoNativeThread: "none",
};

for (const [code, scope] of Object.entries(want)) {
  test(`a turn refused with ${code} reaches OpenClaw as a preflight error ${scope === "harness" ? "scoped to the harness" : "without scope"}`, () => {
    const err = preflightError({ code, message: "the dispatcher's words", scope: "harness", retryable: false });
    assert.ok(err instanceof AgentHarnessPreflightError, "an AgentHarnessPreflightError of the host's SDK");
    assert.equal(err.scope, scope === "harness" ? "harness" : undefined);
    assert.match(err.message, new RegExp(`${code}: the dispatcher's words`), "the message names the cluster's code");
    assert.ok(err.userMessage !== undefined && err.userMessage.length > 0);
    assert.ok(err.cause instanceof DispatcherError && err.cause.wire.code === code);
  });
}

test("the table has one row for every code of the dispatcher's wire package, and no other", () => {
  const codesGo = fileURLToPath(new URL("../../../../internal/contract/wire/codes.go", import.meta.url));
  const goCodes = [...readFileSync(codesGo, "utf8").matchAll(/ErrorCode = "([A-Za-z]+)"/g)].map((m) => m[1]);
  assert.ok(goCodes.length > 30, `read the codes from ${codesGo}`);
  assert.deepEqual(Object.keys(ERROR_TABLE).sort(), [...goCodes].sort());
  assert.deepEqual(Object.keys(want).sort(), [...goCodes].sort());
});

test("a harness-scoped code stays unscoped when the dispatcher did not scope this instance", () => {
  // ToolPolicyUnenforceable for a model of Codex's catalog: another model may work.
  const err = preflightError({ code: "ToolPolicyUnenforceable", message: "catalog model", scope: "", retryable: false });
  assert.equal(err.scope, undefined);
});

test("a SessionMismatch the dispatcher did not scope (another session, a gateway transcript) stays unscoped", () => {
  const err = preflightError({ code: "SessionMismatch", message: "sessionId \"y\" does not match spec.sessionId \"s-1\"", scope: "", retryable: false });
  assert.equal(err.scope, undefined);
});

test("a code the table does not know fails closed: no scope", () => {
  const err = preflightError({ code: "SomethingNew", message: "m", scope: "harness", retryable: true });
  assert.ok(err instanceof AgentHarnessPreflightError);
  assert.equal(err.scope, undefined);
});

test("a claimed turn's failure is no preflight error, whatever its code and scope", () => {
  const failure = claimedFailure({ code: "HarnessUnavailable", message: "server gone", scope: "harness", retryable: true, replaySafe: false });
  assert.ok(!(failure.error instanceof AgentHarnessPreflightError));
  assert.equal(failure.error.wire.code, "HarnessUnavailable");
  assert.equal(failure.replaySafe, false);
  assert.equal(claimedFailure({ code: "HarnessUnsupported", message: "adapter refused", scope: "", retryable: false, replaySafe: true }).replaySafe, true);
});
