// A stand-in for the attempt's hostCapabilities: it records what the plugin
// asked of the host and answers as the test says.
import type { AgentHarnessAttemptParamsV2, AnyAgentTool } from "openclaw/plugin-sdk/agent-harness-runtime";

type Caps = AgentHarnessAttemptParamsV2["hostCapabilities"];
type BeforeToolCall = Parameters<Caps["runBeforeToolCall"]>[0];
type Outcome = Awaited<ReturnType<Caps["runBeforeToolCall"]>>;
type ApprovalAsk = Parameters<Caps["requestApproval"]>[0];
type SurfaceOptions = Parameters<NonNullable<Caps["createToolSurface"]>>[0];

export type FakeHost = {
  caps: Caps;
  surfaceOptions: SurfaceOptions[];
  beforeToolCalls: BeforeToolCall[];
  approvals: ApprovalAsk[];
  waits: string[];
};

export function fakeHost(
  opts: {
    tools?: AnyAgentTool[];
    beforeToolCall?: (req: BeforeToolCall) => Outcome | Promise<Outcome>;
    approval?: { id?: string; decision?: "allow-once" | "allow-always" | "deny" | null };
    waited?: "allow-once" | "allow-always" | "deny";
  } = {},
): FakeHost {
  const host: FakeHost = { surfaceOptions: [], beforeToolCalls: [], approvals: [], waits: [], caps: undefined as unknown as Caps };
  const caps = {
    kind: "agent-harness-host-capability",
    version: 1,
    assertActive: () => undefined,
    bindToolSurface: (tools: AnyAgentTool[]) => tools,
    createToolSurface: (options: SurfaceOptions) => {
      host.surfaceOptions.push(options);
      return opts.tools ?? [];
    },
    runBeforeToolCall: async (req: BeforeToolCall) => {
      host.beforeToolCalls.push(req);
      return opts.beforeToolCall !== undefined ? opts.beforeToolCall(req) : { blocked: false, params: req.params };
    },
    requestApproval: async (req: ApprovalAsk) => {
      host.approvals.push(req);
      return opts.approval;
    },
    waitForApproval: async (req: { approvalId: string }) => {
      host.waits.push(req.approvalId);
      return opts.waited === undefined ? undefined : { decision: opts.waited, terminalReason: "user" };
    },
  };
  host.caps = caps as unknown as Caps;
  return host;
}

/** A bound OpenClaw tool whose execute is the test's. */
export function tool(name: string, execute: AnyAgentTool["execute"], description = `${name} tool`): AnyAgentTool {
  return {
    name,
    label: name,
    description,
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    execute,
  } as unknown as AnyAgentTool;
}
