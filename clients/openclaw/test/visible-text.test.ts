import { test } from "node:test";
import assert from "node:assert/strict";

import { visible, visibleJson } from "../src/visible-text.js";

test("every character that can hide or rewrite what is shown is escaped", () => {
  const cases: Array<[string, string, string]> = [
    ["ESC[2K and CR: erase the line, write over it", "rm -rf /\u001b[2K\rls", "rm -rf /\\x1b[2K\\rls"],
    ["other C0 controls, BEL and NUL", "a\u0000b\u0007c\u0008d", "a\\x00b\\x07c\\x08d"],
    ["DEL", "a\u007fb", "a\\x7fb"],
    ["C1 controls: CSI, NEL", "a\u009b2Kb\u0085c", "a\\x9b2Kb\\x85c"],
    ["bidi overrides, embeddings, marks and isolates", "\u202ea\u202db\u202ac\u202bd\u202ce\u200ef\u200fg\u061ch\u2066i\u2067j\u2068k\u2069", "\\u202ea\\u202db\\u202ac\\u202bd\\u202ce\\u200ef\\u200fg\\u061ch\\u2066i\\u2067j\\u2068k\\u2069"],
    ["zero-width characters and the byte-order mark", "r\u200bm\u2060 \ufeff", "r\\u200bm\\u2060 \\ufeff"],
    ["line and paragraph separators", "a\u2028b\u2029c", "a\\u2028b\\u2029c"],
    ["line feed and tab, in a single-line text", "a\nb\tc", "a\\nb\\tc"],
    ["an unpaired surrogate", "a\ud800b\udc00", "a\\ud800b\\udc00"],
  ];
  for (const [name, text, want] of cases) assert.equal(visible(text), want, name);
});

test("ordinary text is unchanged, and a command keeps its lines", () => {
  for (const text of ["ls -la /ws", "grep -E '^a\\s+b$' x.txt", "naïve café 日本語 👋 — «ok»", "C:\\Users\\me", ""]) assert.equal(visible(text), text);
  assert.equal(visible("echo a\n\techo b\r\n", { keepLineBreaks: true }), "echo a\n\techo b\\r\n");
});

test("a JSON value is one escaped line", () => {
  assert.equal(visibleJson({ "k\u202e": ["\u001b", "\u0085"], n: 1 }), '{"k\\u202e":["\\u001b","\\x85"],"n":1}');
});
