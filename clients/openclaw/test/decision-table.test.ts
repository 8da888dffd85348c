import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import type { AgentHarnessSupport } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { AgentHarness, RuntimePolicy } from "../src/cluster-types.js";
import { predict, type Question, type RouteFacts } from "../src/predict.js";

// One decision table for both engines: test/fixtures/decisions.json is every
// case of the Go engine's TestSelect with what Select decided for it
// (internal/policy/selection/decisiontable_test.go writes it; regenerate with
// `go test ./internal/policy/selection -run TestDecisionTable -update`).
// predict() must agree with every record it can be asked about; a record
// marked deferred uses something supports() never sees (the session, a retry
// set, a tool policy, readiness…), so the dispatcher decides it at runAttempt.

type DecisionRecord = {
  name: string;
  deferred?: string;
  harnesses: AgentHarness[];
  policies: RuntimePolicy[];
  attempt: { provider: string; modelId?: string; agentHarnessRuntimeOverride?: string; modelProvider?: RouteFacts };
  want: { runtime?: string; reason?: string; code?: string };
};

// The tests run from dist/test/: the fixtures stay in the source tree.
const TABLE = new URL("../../test/fixtures/decisions.json", import.meta.url);
const records = (JSON.parse(readFileSync(TABLE, "utf8")) as { records: DecisionRecord[] }).records;

function question(a: DecisionRecord["attempt"]): Question {
  const q: Question = { provider: a.provider };
  if (a.modelId !== undefined) q.modelId = a.modelId;
  if (a.agentHarnessRuntimeOverride !== undefined) q.override = a.agentHarnessRuntimeOverride;
  if (a.modelProvider !== undefined) q.route = a.modelProvider;
  return q;
}

/** Why predict's answer disagrees with what Go decided, or undefined when it agrees. */
function disagreement(want: DecisionRecord["want"], got: AgentHarnessSupport): string | undefined {
  const reason = got.reason ?? "";
  if (want.code !== undefined) {
    // The cluster refuses: fail closed, no fallback, naming the code.
    if (!got.supported && got.fallbackRuntime === undefined && reason.includes(`: ${want.code}: `)) return undefined;
    return `Go refuses with ${want.code}`;
  }
  // Otherwise it runs the turn, and predict names Go's reason too.
  if (want.runtime === "openclaw") {
    if (!got.supported && got.fallbackRuntime === "openclaw" && reason.includes(`embedded runtime (${want.reason}`)) return undefined;
    return `Go runs the embedded runtime (${want.reason})`;
  }
  if (got.supported && reason.includes(`on agent harness "${want.runtime}" (${want.reason}`)) return undefined;
  return `Go runs agent harness "${want.runtime}" (${want.reason})`;
}

test("the decision table exports TestSelect's cases", () => {
  assert.ok(records.length >= 100, `only ${records.length} records`);
  for (const r of records) assert.ok(r.deferred === undefined || r.deferred !== "", `${r.name}: an empty deferral`);
});

test("predict() agrees with the Go engine on every record supports() can be asked about", (t) => {
  const wrong: string[] = [];
  const deferred = new Map<string, number>();
  let agreeing = 0;
  for (const r of records) {
    if (r.deferred !== undefined) {
      deferred.set(r.deferred, (deferred.get(r.deferred) ?? 0) + 1);
      continue; // the dispatcher's: nothing is asserted about the outcome
    }
    const got = predict({ state: "fresh", harnesses: r.harnesses, policies: r.policies }, question(r.attempt));
    const why = disagreement(r.want, got);
    if (why === undefined) agreeing++;
    else wrong.push(`${r.name}: ${why}; predict says ${JSON.stringify(got)}`);
  }
  const deferredTotal = [...deferred.values()].reduce((a, b) => a + b, 0);
  t.diagnostic(`${records.length} records: ${agreeing} agreeing, ${deferredTotal} deferred`);
  for (const [why, n] of [...deferred].sort((a, b) => b[1] - a[1])) t.diagnostic(`  deferred ${n}: ${why}`);
  assert.deepEqual(wrong, [], `predict() disagrees with internal/policy/selection on ${wrong.length} records`);
  assert.equal(agreeing + deferredTotal, records.length);
  assert.ok(agreeing >= 100, `only ${agreeing} records agree`);
});
