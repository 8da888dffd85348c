// The plugin's entry: OpenClaw loads it (package.json openclaw.extensions)
// and calls register with the plugin's configuration block.
import { join } from "node:path";

import { definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";
import { resolveStateDir } from "openclaw/plugin-sdk/state-paths";

import { parseConfig } from "./config.js";
import { createHarness } from "./harness.js";
import { fileMarkers } from "./marker-files.js";

export default definePluginEntry({
  id: "harness-operator",
  name: "Harness Operator",
  description: "Runs prepared agent turns on a Kubernetes cluster's agent harnesses through the harness-operator dispatcher.",
  register(api) {
    // A configuration mistake fails the plugin's load, naming the field.
    const markers = fileMarkers(join(resolveStateDir(), "plugins", "harness-operator", "transcript-markers"));
    api.registerAgentHarness(createHarness(parseConfig(api.pluginConfig ?? {}), { logger: api.logger, markers }));
  },
});
