import { test } from "node:test";
import assert from "node:assert/strict";

import { type ConversationText, digest, gatewayTranscript, MAX_MESSAGES, MAX_TEXT_BYTES, nextMarker } from "../src/transcript-marker.js";

const marker = {
  afterRunId: "run-5",
  sinceMs: 1000,
  ownDigests: [digest("user", "what is the capital of France?"), digest("assistant", "Paris.")],
};

test("the gateway's messages are those after the dispatcher's last turn, without the dispatcher's own turns and the current prompt", () => {
  const recent: ConversationText[] = [
    { role: "user", text: "older, before the marker", timestamp: 999 },
    { role: "user", text: "what is the capital of France?", timestamp: 1000 },
    { role: "assistant", text: "Paris.", timestamp: 1100 },
    { role: "user", text: "what is the capital of Peru?", timestamp: 2000 },
    { role: "assistant", text: "", timestamp: 2050 },
    { role: "assistant", text: "Lima.", timestamp: 2100 },
    { role: "user", text: "and its population?", timestamp: 3000 },
  ];
  assert.deepEqual(gatewayTranscript(marker, recent, "and its population?"), {
    afterRunId: "run-5",
    messages: [
      { role: "user", text: "what is the capital of Peru?" },
      { role: "assistant", text: "Lima." },
    ],
  });
});

test("a text the gateway's user repeats is left out only as often as the dispatcher's turns said it", () => {
  const recent: ConversationText[] = [
    { role: "assistant", text: "Paris.", timestamp: 1100 },
    { role: "user", text: "say it again", timestamp: 2000 },
    { role: "assistant", text: "Paris.", timestamp: 2100 },
  ];
  assert.deepEqual(gatewayTranscript(marker, recent, "next")?.messages, [
    { role: "user", text: "say it again" },
    { role: "assistant", text: "Paris." },
  ]);
});

test("nothing after the marker sends no gatewayTranscript", () => {
  assert.equal(gatewayTranscript(marker, [{ role: "assistant", text: "Paris.", timestamp: 1100 }], "next"), undefined);
});

test("the newest messages within the dispatcher's bounds are sent", () => {
  const many: ConversationText[] = Array.from({ length: MAX_MESSAGES + 10 }, (_, i) => ({ role: "user", text: `m${i}`, timestamp: 2000 + i }));
  const sent = gatewayTranscript(marker, many, "next")?.messages ?? [];
  assert.equal(sent.length, MAX_MESSAGES);
  assert.equal(sent[0]?.text, "m10");
  const big = "x".repeat(MAX_TEXT_BYTES / 2);
  const large: ConversationText[] = [1, 2, 3].map((i) => ({ role: "user", text: `${i}${big}`, timestamp: 2000 + i }));
  assert.deepEqual(gatewayTranscript(marker, large, "next")?.messages.map((m) => m.text[0]), ["3"], "512 KiB of text at most");
});

test("a turn that gave the thread the gateway's messages, or had none to give, starts a new window", () => {
  const texts = [{ role: "user" as const, text: "q" }, { role: "assistant" as const, text: "a" }];
  const fresh = nextMarker(marker, { runId: "run-7", startedAtMs: 5000, texts, sentMessages: true, reseeded: true });
  assert.deepEqual(fresh, { afterRunId: "run-7", sinceMs: 5000, ownDigests: [digest("user", "q"), digest("assistant", "a")] });
  assert.deepEqual(nextMarker(undefined, { runId: "run-1", startedAtMs: 10, texts, sentMessages: false, reseeded: false }).sinceMs, 10);
});

test("a journaled turn whose thread did not get the gateway's messages names itself and keeps the window, so they are sent again", () => {
  const texts = [{ role: "user" as const, text: "q" }];
  const kept = nextMarker(marker, { runId: "run-7", startedAtMs: 5000, texts, sentMessages: true, reseeded: false });
  assert.deepEqual(kept, { afterRunId: "run-7", sinceMs: 1000, ownDigests: [...marker.ownDigests, digest("user", "q")] });
});
