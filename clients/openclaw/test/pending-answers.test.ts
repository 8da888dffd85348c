import { test } from "node:test";
import assert from "node:assert/strict";

import { PendingAnswers } from "../src/pending-answers.js";
import { deferred } from "./attempt-fixtures.js";

test("nothing is answered once OpenClaw aborted the attempt: a host tool never starts after the abort", () => {
  const abort = new AbortController();
  abort.abort();
  const started: string[] = [];
  new PendingAnswers(abort.signal, () => undefined).add(async () => void started.push("call_1"));
  assert.deepEqual(started, []);
});

test("an answer that fails is reported, and closing tells every answer still waiting to give up", async () => {
  const errors: string[] = [];
  const answers = new PendingAnswers(undefined, (err) => void errors.push((err as Error).message));
  const told = deferred<string>();
  answers.add(async () => {
    throw new Error("no tool surface");
  });
  answers.add(
    (signal) =>
      new Promise<void>((resolve) => {
        signal.addEventListener("abort", () => (told.resolve("told"), resolve()), { once: true });
      }),
  );
  await answers.close();
  assert.deepEqual(errors, ["no tool surface"]);
  assert.equal(await told.promise, "told");
});
