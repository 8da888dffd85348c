import { test } from "node:test";
import assert from "node:assert/strict";

import { dispatcherRunId } from "../src/run-id.js";

test("the dispatcher's runId depends on the body's fields, not on their order", () => {
  const a = dispatcherRunId("r", { prompt: "hi", tools: [{ name: "t", parameters: { type: "object", required: ["x"] } }] });
  const b = dispatcherRunId("r", { tools: [{ parameters: { required: ["x"], type: "object" }, name: "t" }], prompt: "hi" });
  assert.equal(a, b);
  assert.notEqual(dispatcherRunId("r", { tools: [{ name: "t" }, { name: "u" }] }), dispatcherRunId("r", { tools: [{ name: "u" }, { name: "t" }] }), "the tools' order is part of the body");
});

test("the dispatcher's runId stays within its 128 bytes for any OpenClaw runId", () => {
  const uuid = "0fc40a58-bddf-40bf-82f8-64fcbb8e841e";
  assert.match(dispatcherRunId(uuid, {}), new RegExp(`^${uuid}\\.[0-9a-f]{16}$`));
  for (const long of ["r".repeat(111), "r".repeat(112), "é".repeat(100)]) {
    const id = dispatcherRunId(long, { prompt: "hi" });
    assert.ok(Buffer.byteLength(id) <= 128, `${Buffer.byteLength(id)} bytes`);
    assert.equal(id, dispatcherRunId(long, { prompt: "hi" }));
  }
  assert.ok(dispatcherRunId("r".repeat(111), {}).startsWith("r".repeat(111) + "."), "kept whole while it fits");
});
