// Transcript markers as files in OpenClaw's state directory. OpenClaw's own
// plugin state store (api.runtime.state.openKeyedStore) is given only to
// plugins installed from its official registries: 2026.9.6 refuses it to a
// plugin installed from an archive or a local path ("openKeyedStore is only
// available for trusted plugins"), which is how platform teams install this
// one. One small file per OpenClaw session, named by a digest of the session
// id, written whole (a temporary file renamed over it), readable by the
// gateway's user only.
import { createHash, randomBytes } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";

import type { MarkerStore, TranscriptMarker } from "./transcript-marker.js";

export function fileMarkers(dir: string): MarkerStore {
  const path = (key: string): string => join(dir, `${createHash("sha256").update(key).digest("hex").slice(0, 40)}.json`);
  return {
    lookup: async (key) => {
      let text: string;
      try {
        text = await readFile(path(key), "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw err;
      }
      return JSON.parse(text) as TranscriptMarker;
    },
    register: async (key, value) => {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const tmp = `${path(key)}.${randomBytes(6).toString("hex")}.tmp`;
      await writeFile(tmp, JSON.stringify(value), { mode: 0o600 });
      await rename(tmp, path(key));
    },
  };
}
