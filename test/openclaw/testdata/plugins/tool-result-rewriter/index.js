// A tool-result middleware, for the real-OpenClaw test only: the plugin
// registers a host tool of its own, probe_lookup, whose output starts
// "RAW", and a middleware for runtime "codex" whose matcher names just that
// tool and rewrites "RAW" to "REWRITTEN". The model's next request shows
// which of the two reached it.
//
// With `nativeMatcher` in its config (a gateway of the spec's own) it also
// registers a pass-through middleware whose matcher names those tools, to
// cover a tool Codex runs natively.

import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";

export default definePluginEntry({
  id: "tool-result-rewriter",
  name: "Tool-result rewriter (test)",
  description: "Test-only: a host tool, and a codex tool-result middleware that rewrites that tool's output.",
  register(api) {
    api.registerTool({
      name: "probe_lookup",
      label: "Probe lookup",
      description: "Look a word up.",
      parameters: {
        type: "object",
        additionalProperties: false,
        required: ["word"],
        properties: { word: { type: "string", description: "The word to look up." } },
      },
      async execute(_id, params) {
        return { content: [{ type: "text", text: `RAW lookup of ${params.word}` }], details: { word: params.word } };
      },
    });
    api.registerAgentToolResultMiddleware(
      (event) => ({
        result: {
          ...event.result,
          content: event.result.content.map((c) => (c.type === "text" ? { ...c, text: c.text.replaceAll("RAW", "REWRITTEN") } : c)),
        },
      }),
      { runtimes: ["codex"], matcher: ["probe_lookup"] },
    );
    const native = api.pluginConfig?.nativeMatcher;
    if (Array.isArray(native) && native.length > 0) {
      api.registerAgentToolResultMiddleware(() => undefined, { runtimes: ["codex"], matcher: native });
    }
  },
});
