// The plugin's entry: OpenClaw loads it (package.json openclaw.extensions)
// and calls register with the plugin's configuration block.
import { join } from "node:path";

import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";
import { resolveStateDir } from "openclaw/plugin-sdk/state-paths";

import { readPlanModesFrom } from "./collaboration-mode.js";
import { parseConfig } from "./config.js";
import { createHarness } from "./harness.js";
import { fileMarkers } from "./marker-files.js";
import { registerPlanMode } from "./plan-mode.js";
import { openClawTranscript } from "./transcript-mirror.js";

export default definePluginEntry({
  id: "harness-operator",
  name: "Harness Operator",
  description: "Runs prepared agent turns on a Kubernetes cluster's agent harnesses through the harness-operator dispatcher.",
  register(api) {
    // A configuration mistake fails the plugin's load, naming the field.
    const markers = fileMarkers(join(resolveStateDir(), "plugins", "harness-operator", "transcript-markers"));
    const harness = createHarness(parseConfig(api.pluginConfig ?? {}), { logger: api.logger, markers, mirror: openClawTranscript });
    api.registerAgentHarness(harness);
    // `/plan on|off`: the session's cluster turns in Codex's plan mode (plan-mode.ts).
    registerPlanMode(api, join(resolveStateDir(), "plugins", "harness-operator", "plan-mode"), readPlanModesFrom);
    // OpenClaw retires an instance (a reload, the plugin disabled) before it
    // would call the harness's dispose, and its guard then refuses that call
    // ("a retired instance cannot admit a fresh invocation"). The instance's
    // own cleanup hook does run: it stops the cluster registry's polling.
    // Absent when OpenClaw loads the plugin without an instance (inspection).
    api.lifecycle?.onDispose?.(() => harness.dispose?.());
  },
});
