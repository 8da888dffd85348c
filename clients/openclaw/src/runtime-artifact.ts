// The harness SDK's verified runtime artifacts, for a harness whose implementation
// runs in the cluster. The artifact is the attested cluster server's: the
// operator attests the app-servers it manages (an AgentHarness's `Attested`
// condition) and publishes their artifact — image digest with the
// handshake's version — as status.runtimeArtifact. So:
//   - a turn asked to capture it (captureRuntimeArtifact) carries the
//     dispatcher's runtimeArtifact of the server that ran it
//     (turn-request.ts, attempt-result.ts);
//   - a verified continuation (expectedRuntimeArtifact) is refused by the
//     dispatcher with ArtifactMismatch before any native thread starts when
//     the chosen server is not attested or runs another artifact;
//   - runtimeArtifact.validate, OpenClaw's recheck at setup and
//     persistent-operation boundaries, asks the cluster whether an attested
//     AgentHarness still publishes exactly that artifact.
// An external (unmanaged) server is never attested: a version string alone
// is not an artifact identity (the harness SDK).
import type { AgentHarnessV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import { HARNESS_API, type KubeClient } from "./kube.js";

type Capability = NonNullable<AgentHarnessV2["runtimeArtifact"]>;
type Binding = Parameters<Capability["validate"]>[0];

/** The part of an AgentHarness the recheck reads. */
type AttestedHarness = {
  status?: {
    conditions?: Array<{ type?: string; status?: string }>;
    runtimeArtifact?: { id?: string; fingerprint?: string };
  };
};

/**
 * The harness's runtimeArtifact capability. A failed read throws: OpenClaw
 * takes a recheck that failed for a binding that does not hold.
 */
export function runtimeArtifactCapability(kube: Pick<KubeClient, "list">): Capability {
  return {
    async validate(binding: Binding): Promise<boolean> {
      const harnesses = await kube.list<AttestedHarness>(`${HARNESS_API}/agentharnesses`);
      return harnesses.some((h) => attestsArtifact(h, binding));
    },
  };
}

function attestsArtifact(h: AttestedHarness, binding: Binding): boolean {
  const attested = h.status?.conditions?.some((c) => c.type === "Attested" && c.status === "True") === true;
  const art = h.status?.runtimeArtifact;
  return attested && art?.id === binding.id && art.fingerprint === binding.fingerprint;
}
