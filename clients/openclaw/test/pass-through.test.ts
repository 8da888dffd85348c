import { test } from "node:test";
import assert from "node:assert/strict";

import { type AttemptInput, turnRequest } from "../src/turn-request.js";

const base = {
  runId: "run-1", sessionId: "3f6d2a9e", sessionKey: "agent:main:demo", agentId: "main",
  provider: "openai", modelId: "gpt-5.5", prompt: "Review the skill", trigger: "manual",
} as AttemptInput;

test("a proposal-only skill-workshop run reaches the cluster as one, and is another run than the same prompt without it", () => {
  const plain = turnRequest(base);
  const review = turnRequest({ ...base, skillWorkshopProposalOnly: true });
  assert.equal(review.skillWorkshopProposalOnly, true);
  assert.equal(review.trigger, "manual");
  assert.notEqual(review.runId, plain.runId, "the flag is part of the run's request, so of its runId");
});

test("an ordinary turn sends no skill-workshop flag: false and absent leave the body and its runId unchanged", () => {
  const plain = turnRequest(base);
  const off = turnRequest({ ...base, skillWorkshopProposalOnly: false });
  assert.equal("skillWorkshopProposalOnly" in plain, false);
  assert.deepEqual(off, plain);
});
