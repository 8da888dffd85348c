// A caller of OpenClaw's isolated completion, for the real-OpenClaw test
// only: its tool asks api.runtime.llm.complete for one prompt-only completion
// in "isolated-agent-runtime" mode, which OpenClaw routes to the
// runIsolatedCompletionV2 of the harness that runs the model, and returns the
// completion's text. A failed call is returned as text too (its code and the
// causes OpenClaw chained to it), so the model's next request shows why.
//
// The model is the one the tool is given: OpenClaw lets this plugin name it
// (plugins.entries.<id>.llm in the suite's gateway config).

import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";

// The caller's system prompt: the harness sends it as the call's
// instructions, in place of its runtime's own.
const SYSTEM_PROMPT = "You answer with one short sentence.";

function describe(err) {
  const parts = [];
  for (let e = err; e !== undefined && e !== null && parts.length < 5; e = e.cause) {
    const code = typeof e.code === "string" ? `${e.code}: ` : "";
    parts.push(code + (e instanceof Error ? e.message : String(e)));
  }
  return parts.join(" <- ");
}

export default definePluginEntry({
  id: "isolated-completion-caller",
  name: "Isolated completion caller (test)",
  description: "Test-only: a tool that asks OpenClaw for an isolated completion and returns its text.",
  register(api) {
    api.registerTool({
      name: "isolated_completion",
      label: "Isolated completion",
      description: "Ask a model one question in isolation (no tools, no history) and return its answer.",
      parameters: {
        type: "object",
        additionalProperties: false,
        required: ["prompt", "model"],
        properties: {
          prompt: { type: "string", description: "The one user message." },
          model: { type: "string", description: "provider/model to ask." },
        },
      },
      async execute(_id, params, signal) {
        try {
          const result = await api.runtime.llm.complete({
            messages: [{ role: "user", content: params.prompt }],
            systemPrompt: SYSTEM_PROMPT,
            model: params.model,
            purpose: "isolated-completion-caller.e2e",
            execution: { mode: "isolated-agent-runtime" },
            ...(signal ? { signal } : {}),
          });
          return {
            content: [{ type: "text", text: result.text }],
            details: { owner: result.execution?.owner ?? null },
          };
        } catch (err) {
          return {
            content: [{ type: "text", text: `isolated completion failed: ${describe(err)}` }],
            details: { failed: true },
          };
        }
      },
    });
  },
});
