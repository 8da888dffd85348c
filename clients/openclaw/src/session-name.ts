// The AgentSession name for an OpenClaw session id: the same DNS-safe name
// `kubectl harness session create` gives it (cmd/kubectl-harness/session.go,
// sessionName), so a session created by either finds the other's.
import { createHash } from "node:crypto";

// A DNS label (63) and the hash suffix of a shortened name.
const MAX_NAME_LEN = 63;
const HASH_LEN = 8;

/**
 * The id lowercased, every character other than a-z, 0-9 and '-' replaced by
 * '-', leading and trailing '-' removed. A result longer than 63 characters
 * is cut to 54 (then trailing '-' removed) and gets '-' plus the first 8 hex
 * digits of the SHA-256 of the whole id (its UTF-8 bytes); an empty result is
 * "session-" plus those digits.
 */
export function sessionName(sessionId: string): string {
  let name = "";
  // for..of walks code points, as Go's range over a string walks runes: one
  // non-ASCII character becomes one '-'.
  for (const ch of sessionId) {
    const lower = goLower(ch);
    name += /^[a-z0-9-]$/.test(lower) ? lower : "-";
  }
  name = name.replace(/^-+|-+$/g, "");
  if (name !== "" && name.length <= MAX_NAME_LEN) return name;
  const suffix = createHash("sha256").update(sessionId, "utf8").digest("hex").slice(0, HASH_LEN);
  if (name === "") return `session-${suffix}`;
  return `${name.slice(0, MAX_NAME_LEN - 1 - HASH_LEN).replace(/-+$/, "")}-${suffix}`;
}

// goLower lowercases one code point as Go's unicode.ToLower does (simple case
// mapping). JavaScript's toLowerCase applies the full mapping, which differs
// where it matters here only for U+0130 (İ): Go gives "i", JavaScript
// "i̇" (two code points). A multi-code-point result is never ASCII.
function goLower(ch: string): string {
  if (ch === "\u0130") return "i";
  const lower = ch.toLowerCase();
  return [...lower].length === 1 ? lower : ch;
}
