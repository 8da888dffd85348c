// The cluster's turn in OpenClaw's session transcript: what chat.history
// (OpenClaw's Control UI) shows of it is what the plugin appends there.
import { test } from "node:test";
import assert from "node:assert/strict";

import type { AgentMessage } from "openclaw/plugin-sdk/agent-harness-runtime";

import { createHarness } from "../src/harness.js";
import { type AppendTranscriptMessage, type MirrorDeps } from "../src/transcript-mirror.js";
import { attemptParams as params } from "./attempt-fixtures.js";
import { sse, startLoopback } from "./loopback.js";

type Append = Parameters<AppendTranscriptMessage>[0];

const RUN = "gw-weather-0001";

// A turn that called a native tool and answered, as the dispatcher streams it.
const TOOL_TURN: Array<[number, string, unknown]> = [
  [1, "selected", { runId: RUN, turnToken: "tt" }],
  [2, "transcript", { type: "message", role: "user", text: "What is the weather in Paris?" }],
  [3, "transcript", { type: "tool_call", role: "assistant", callId: "call_3", tool: "shell", arguments: { cmd: "weather Paris" }, native: true }],
  [4, "transcript", { type: "tool_result", role: "tool", callId: "call_3", tool: "shell", text: "18°C", native: true }],
  [5, "transcript", { type: "message", role: "assistant", text: "It is 18°C in Paris." }],
  [6, "result", { assistantTexts: ["It is 18°C in Paris."], terminal: { kind: "ok" } }],
];

/** OpenClaw's transcript as the mirror sees it: every append, in order. */
function recordingTranscript(over: Partial<MirrorDeps> = {}): MirrorDeps & { appends: Append[] } {
  const appends: Append[] = [];
  return {
    appends,
    append: async (p) => {
      appends.push(p);
      return { kind: "result", result: { appended: true, messageId: `m${appends.length}` } };
    },
    beforeWrite: ({ message }) => message,
    ...over,
  };
}

function textsOf(m: AgentMessage): string[] {
  if (m.role !== "assistant" && m.role !== "toolResult") return [];
  return m.content.flatMap((c) => (c.type === "text" ? [c.text] : []));
}

async function runTurn(mirror: MirrorDeps, logged: string[] = []) {
  const lb = await startLoopback((_req, res) => sse(res, TOOL_TURN, RUN));
  try {
    const harness = createHarness(lb.config, { mirror, logger: { warn: (m: string) => void logged.push(m) } });
    const result = await harness.runAttempt(params({ model: { api: "openai-responses" } }));
    assert.ok("terminal" in result);
    return result;
  } finally {
    await lb.close();
  }
}

test("a turn's tool exchange and answer are appended to the session's transcript after OpenClaw's prompt, and the answer is marked as written", async () => {
  const transcript = recordingTranscript();
  const result = await runTurn(transcript);

  assert.deepEqual(result.terminal, { kind: "ok" });
  // The prompt is OpenClaw's own row: only what the turn produced is added.
  assert.deepEqual(transcript.appends.map((a) => a.message.role), ["assistant", "toolResult", "assistant"]);
  assert.deepEqual(transcript.appends.map((a) => textsOf(a.message)), [[], ["18°C"], ["It is 18°C in Paris."]]);
  for (const a of transcript.appends) {
    assert.deepEqual(
      { sessionId: a.sessionId, sessionKey: a.sessionKey, agentId: a.agentId, runId: a.runId, lookup: a.idempotencyLookup, update: a.updateMode },
      { sessionId: "Weather:1", sessionKey: "agent:main:weather", agentId: "main", runId: RUN, lookup: "scan", update: "inline" },
      "the session OpenClaw prepared, its run, a live update for the Control UI",
    );
  }
  const keys = transcript.appends.map((a) => (a.message as { idempotencyKey?: string }).idempotencyKey);
  assert.equal(new Set(keys).size, 3, "each message has a key of its own, so a replay of the turn adds nothing");
  assert.equal(result.assistantTranscriptOwned, true, "OpenClaw's delivery mirror does not write the answer again");
  assert.equal(result.assistantTranscriptIdempotencyKey, keys[2]);
});

test("a second attempt of the same run appends the same messages under the same keys", async () => {
  const first = recordingTranscript();
  const second = recordingTranscript();
  await runTurn(first);
  await runTurn(second);
  assert.equal(first.appends.length, 3);
  assert.deepEqual(
    second.appends.map((a) => (a.message as { idempotencyKey?: string }).idempotencyKey),
    first.appends.map((a) => (a.message as { idempotencyKey?: string }).idempotencyKey),
  );
});

test("a message OpenClaw's before_message_write hooks decline is not appended; a declined answer is still the transcript's decision", async () => {
  const transcript = recordingTranscript({
    beforeWrite: ({ message }) => (message.role === "assistant" && textsOf(message).length > 0 ? null : message),
  });
  const result = await runTurn(transcript);
  assert.deepEqual(transcript.appends.map((a) => a.message.role), ["assistant", "toolResult"]);
  assert.equal(result.assistantTranscriptOwned, true);
});

test("a hook's rewrite is what is appended", async () => {
  const transcript = recordingTranscript({
    beforeWrite: ({ message }) => (message.role === "toolResult" ? { ...message, content: [{ type: "text", text: "[redacted]" }] } : message),
  });
  await runTurn(transcript);
  assert.deepEqual(textsOf(transcript.appends[1]!.message), ["[redacted]"]);
});

test("a session that changed under the turn gets nothing more, and the answer is not claimed as written", async () => {
  const transcript = recordingTranscript();
  transcript.append = async (p) => {
    transcript.appends.push(p);
    return { kind: "rejected", reason: "session-rebound" };
  };
  const logged: string[] = [];
  const result = await runTurn(transcript, logged);
  assert.equal(transcript.appends.length, 1, "the first refusal stops the mirror");
  assert.equal(result.assistantTranscriptOwned, undefined);
  assert.equal(result.terminal.kind, "ok", "the turn's result stands");
  assert.match(logged.join("\n"), /changed during run/);
});

test("a failed append leaves the turn's result as it was and is logged", async () => {
  const transcript = recordingTranscript();
  let calls = 0;
  transcript.append = async () => {
    calls++;
    if (calls === 3) throw new Error("database is locked");
    return { kind: "result", result: { appended: true } };
  };
  const logged: string[] = [];
  const result = await runTurn(transcript, logged);
  assert.deepEqual(result.terminal, { kind: "ok" });
  assert.deepEqual(result.assistantTexts, ["It is 18°C in Paris."]);
  assert.equal(result.assistantTranscriptOwned, undefined, "the answer is not in the transcript: OpenClaw's own mirror may write it");
  assert.equal(result.assistantTranscriptIdempotencyKey, undefined);
  assert.match(logged.join("\n"), /mirroring run .* failed: database is locked/);
});

test("a harness made without OpenClaw's transcript mirrors nothing and claims nothing", async () => {
  const lb = await startLoopback((_req, res) => sse(res, TOOL_TURN, RUN));
  try {
    const result = await createHarness(lb.config).runAttempt(params({ model: { api: "openai-responses" } }));
    assert.ok("terminal" in result);
    assert.equal(result.assistantTranscriptOwned, undefined);
  } finally {
    await lb.close();
  }
});
