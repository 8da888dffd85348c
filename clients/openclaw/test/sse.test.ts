import { test } from "node:test";
import assert from "node:assert/strict";

import { readSse, type SseEvent } from "../src/sse.js";

async function collect(chunks: string[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const ev of readSse(chunks.map((c) => Buffer.from(c)))) out.push(ev);
  return out;
}

test("stream events are read across chunk boundaries, comments skipped and an unfinished event dropped", async () => {
  const got = await collect([
    ": comment\nid: 1\nevent: sel",
    "ected\ndata: {\"a\":1}\n\nid: 2\r\nevent: partial\r\ndata: line1\ndata: line2\n\n",
    "event: error\ndata: {}\n\nid: 9\nevent: partial\ndata: incomplete",
  ]);
  assert.deepEqual(got, [
    { id: "1", event: "selected", data: "{\"a\":1}" },
    { id: "2", event: "partial", data: "line1\nline2" },
    { event: "error", data: "{}" },
  ]);
});

test("a multi-byte character split between chunks is decoded whole", async () => {
  const bytes = Buffer.from("event: partial\ndata: 18°C\n\n");
  const cut = bytes.indexOf(0xb0); // the second byte of '°'
  const out: SseEvent[] = [];
  for await (const ev of readSse([bytes.subarray(0, cut), bytes.subarray(cut)])) out.push(ev);
  assert.equal(out[0]?.data, "18°C");
});
