// The runtime's strings as a person may see them. What the runtime asks
// about (a command, its working directory, paths, a reason, a question, a
// permission grant) is written by the model, and reaches people through
// OpenClaw's approval and question prompts: terminals, chat channels, the
// Control UI. A control character or a bidi override in it could erase or
// reorder what the person reads (ESC[2K clears a terminal line, CR returns
// to its start, U+202E shows the rest right to left), so that they approve
// something other than what runs. Every such character is shown as an
// escape instead: \x1b, \r, \u202e.
//
// Escaped: C0 controls, DEL, C1 controls, the bidi marks, embeddings,
// overrides and isolates, zero-width characters, the byte-order mark, the
// Unicode line and paragraph separators, and unpaired surrogates. A
// backslash already in the text is left as it is: ordinary commands are full
// of them, and a person who sees "\r" is warned either way.

// Everything escaped, except what keepLineBreaks leaves.
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const HIDDEN_BUT_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

const NAMED: Readonly<Record<string, string>> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function escape(ch: string): string {
  const named = NAMED[ch];
  if (named !== undefined) return named;
  const code = ch.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
}

/**
 * text with every character that could hide or rewrite what is shown
 * escaped. keepLineBreaks leaves LF and TAB: a command's lines are shell
 * syntax, and OpenClaw's policy and hooks must see the lines the shell
 * runs (written as "\n", two commands would read as one).
 */
export function visible(text: string, opts: { keepLineBreaks?: boolean } = {}): string {
  return text.replace(opts.keepLineBreaks === true ? HIDDEN_BUT_LINES : HIDDEN, escape);
}

/** A JSON value as one visible line: JSON, then escaped (JSON.stringify leaves C1 controls and bidi characters as they are). */
export function visibleJson(value: unknown): string {
  return visible(JSON.stringify(value) ?? "null");
}

/** A parsed JSON value with every string in it, keys included, escaped: what the runtime sent, as display data. */
export function visibleDeep(value: unknown): unknown {
  if (typeof value === "string") return visible(value);
  if (Array.isArray(value)) return value.map(visibleDeep);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [visible(k), visibleDeep(v)]));
  }
  return value;
}
