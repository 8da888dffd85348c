import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, readdir, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { fileMarkers } from "../src/marker-files.js";

test("a session's transcript marker written by one process is read by the next, and only by its session", async () => {
  const dir = join(await mkdtemp(join(tmpdir(), "markers-")), "transcript-markers");
  const marker = { afterRunId: "run-7", sinceMs: 1_700_000_000_000, ownDigests: ["a1", "b2"] };
  assert.equal(await fileMarkers(dir).lookup("Session:1"), undefined, "no marker before the first turn");

  await fileMarkers(dir).register("Session:1", marker);

  assert.deepEqual(await fileMarkers(dir).lookup("Session:1"), marker, "a new store (the next `openclaw agent` process) reads it");
  assert.equal(await fileMarkers(dir).lookup("Session:2"), undefined);
  await fileMarkers(dir).register("Session:1", { ...marker, afterRunId: "run-8" });
  assert.equal((await fileMarkers(dir).lookup("Session:1"))?.afterRunId, "run-8", "a later turn replaces it");
  const files = await readdir(dir);
  assert.equal(files.length, 1, `one file per session, no temporary file left: ${files.join(", ")}`);
  assert.equal((await stat(join(dir, files[0] ?? ""))).mode & 0o077, 0, "readable by the gateway's user only");
});
