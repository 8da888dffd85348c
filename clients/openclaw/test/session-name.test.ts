import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";

import { sessionName } from "../src/session-name.js";

function shortHash(s: string): string {
  return createHash("sha256").update(s, "utf8").digest("hex").slice(0, 8);
}

test("session names are the ones kubectl harness session create gives the same ids", () => {
  const long = "a".repeat(60) + "-" + "b".repeat(20);
  const cut = "a".repeat(53) + "--" + "c".repeat(20);
  // The vectors of cmd/kubectl-harness TestSessionName, then non-ASCII ids
  // whose names were taken from the Go function itself.
  const cases: Array<[string, string]> = [
    ["3f6d2a9e-5b1c-4e8a-9d07-2c41b8e6f5a0", "3f6d2a9e-5b1c-4e8a-9d07-2c41b8e6f5a0"],
    ["Demo", "demo"],
    ["agent:main:main", "agent-main-main"],
    ["a.b_c", "a-b-c"],
    ["x.", "x"],
    ["__", "session-" + shortHash("__")],
    ["z".repeat(63), "z".repeat(63)],
    ["z".repeat(64), "z".repeat(54) + "-" + shortHash("z".repeat(64))],
    [cut, "a".repeat(53) + "-" + shortHash(cut)],
    [long, "a".repeat(54) + "-" + shortHash(long)],
    ["İstanbul", "istanbul"],
    ["\u212Aelvin", "kelvin"],
    ["Ünïcode-Straße", "n-code-stra-e"],
    ["日本", "session-cf2abf0c"],
    ["agent:MAIN:Ö", "agent-main"],
  ];
  for (const [id, want] of cases) {
    const got = sessionName(id);
    assert.equal(got, want, `sessionName(${JSON.stringify(id)})`);
    assert.ok(got.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(got), `${got} is a DNS label`);
  }
});

test("long session ids sharing a prefix get different names", () => {
  assert.notEqual(sessionName("q".repeat(70) + "1"), sessionName("q".repeat(70) + "2"));
});
