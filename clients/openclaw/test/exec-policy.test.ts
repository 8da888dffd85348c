import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";

import { effectiveExecPolicy, type ExecPolicyInput, nativeApprovalMode } from "../src/exec-policy.js";
import { createHarness } from "../src/harness.js";
import { attemptParams as params } from "./attempt-fixtures.js";
import { startLoopback, write } from "./loopback.js";

function input(extra: Record<string, unknown>): ExecPolicyInput {
  return { agentId: "main", ...extra } as unknown as ExecPolicyInput;
}

const exec = (settings: Record<string, unknown>) => ({ tools: { exec: settings } });
const agentExec = (settings: Record<string, unknown>) => ({ agents: { entries: { main: { tools: { exec: settings } } } } });

test("an exec policy the cluster cannot hold is refused: allowlist, ask, auto, deny, ask always, and a setting nobody can read", () => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ["tools.exec.mode allowlist", { config: exec({ mode: "allowlist" }) }, /"allowlist" \(security allowlist, ask off\)/],
    ["tools.exec.mode ask: a person for every command off the allowlist", { config: exec({ mode: "ask" }) }, /"ask" \(security allowlist, ask on-miss\)/],
    ["tools.exec.mode auto", { config: exec({ mode: "auto" }) }, /"auto"/],
    ["tools.exec.mode deny", { config: exec({ mode: "deny" }) }, /"deny"/],
    ["legacy security allowlist", { config: exec({ security: "allowlist", ask: "on-miss" }) }, /security allowlist/],
    ["an allowlist with the session's ask off: once sent as never", { config: exec({ security: "allowlist" }), execOverrides: { ask: "off" } }, /"allowlist" \(security allowlist, ask off\)/],
    ["the agent's own allowlist", { config: agentExec({ mode: "allowlist" }) }, /"allowlist"/],
    ["the session asks about every command", { execOverrides: { ask: "always" } }, /ask always/],
    ["a mode OpenClaw does not have", { config: exec({ mode: "strict" }) }, /tools\.exec\.mode: "strict" is none of deny, allowlist, ask, auto, full/],
  ];
  for (const [name, extra, reason] of cases) {
    const got = nativeApprovalMode(input(extra));
    assert.ok("refused" in got, name);
    assert.match(got.refused, reason, name);
  }
});

test("a policy the cluster can hold gets its approval mode: asked unless the attempt says unattended", () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ["no exec settings: OpenClaw's full default, the runtime still asks", {}, "untrusted"],
    ["tools.exec.mode full", { config: exec({ mode: "full" }) }, "untrusted"],
    ["security full, ask on a miss", { config: exec({ security: "full", ask: "on-miss" }) }, "untrusted"],
    ["the session's ask off", { execOverrides: { ask: "off" } }, "never"],
    ["the session's full mode over a configured allowlist", { config: exec({ mode: "allowlist" }), execOverrides: { mode: "full" } }, "never"],
    ["the session's full permission mode", { config: exec({ mode: "allowlist" }), permissionMode: "full" }, "never"],
    ["a mode written as OpenClaw accepts it", { config: exec({ mode: " Full " }) }, "untrusted"],
  ];
  for (const [name, extra, want] of cases) assert.deepEqual(nativeApprovalMode(input(extra)), { approvalMode: want }, name);
  assert.deepEqual(effectiveExecPolicy(input({ config: { ...exec({ mode: "full" }), ...agentExec({ mode: "ask" }) } })), { mode: "ask", security: "allowlist", ask: "on-miss", autoReview: false }, "the agent's settings over the config's");
});

test("an attempt under OpenClaw's exec allowlist fails before anything is sent, without scope; under full it runs", async () => {
  const lb = await startLoopback((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
    write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt" });
    write(res, 2, "result", { assistantTexts: ["sunny"], terminal: { kind: "ok" } });
    res.end();
  });
  try {
    const harness = createHarness(lb.config);
    await assert.rejects(harness.runAttempt(params({ config: exec({ mode: "allowlist" }) })), (err: unknown) => {
      assert.ok(err instanceof AgentHarnessPreflightError);
      assert.equal(err.scope, undefined);
      assert.match(err.message, /exec policy for this attempt is "allowlist".*Nothing was sent/);
      return true;
    });
    assert.equal(lb.requests.length, 0);
    const result = await harness.runAttempt(params({ config: exec({ mode: "full" }) }));
    assert.ok("terminal" in result);
    assert.deepEqual(result.terminal, { kind: "ok" });
    assert.equal(JSON.parse(lb.requests[0]?.body ?? "{}").approvalMode, "untrusted");
  } finally {
    await lb.close();
  }
});
