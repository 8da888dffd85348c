import { test } from "node:test";
import assert from "node:assert/strict";

import type { AnyAgentTool } from "openclaw/plugin-sdk/agent-harness-runtime";

import { hostTools, runHostTool, toolSurface, type ToolSurfaceInput } from "../src/tools.js";
import { fakeHost, tool } from "./host.js";

function input(extra: Record<string, unknown>): ToolSurfaceInput {
  return {
    provider: "openai", modelId: "gpt-5.5", thinkLevel: "low", model: { api: "openai-responses", baseUrl: "https://api.openai.com/v1" },
    ...extra,
  } as unknown as ToolSurfaceInput;
}

const noop: AnyAgentTool["execute"] = async () => ({ content: [], details: undefined });

test("the tools come from the attempt's own tool surface, built for the attempt's run, channel and model", () => {
  const host = fakeHost({ tools: [tool("message", noop), tool("web_search", noop)] });
  const signal = new AbortController().signal;
  const store = { profiles: "tools" };
  const tools = toolSurface(input({
    hostCapabilities: host.caps, agentId: "main", sessionKey: "agent:main:demo", runId: "run-1", messageChannel: "slack",
    workspaceDir: "/ws", abortSignal: signal, authProfileStore: { profiles: "transport" }, toolAuthProfileStore: store,
  }));
  assert.deepEqual(tools.map((t) => t.name), ["message", "web_search"]);
  assert.equal(host.surfaceOptions.length, 1);
  const o = host.surfaceOptions[0] as Record<string, unknown>;
  assert.deepEqual(o["toolConstructionPlan"], {
    includeBaseCodingTools: false, includeShellTools: false, includeChannelTools: true, includeOpenClawTools: true, includePluginTools: true,
  }, "OpenClaw's file and shell tools are not offered beside the native runtime's own");
  assert.equal(o["modelProvider"], "openai");
  assert.equal(o["modelId"], "gpt-5.5");
  assert.equal(o["modelApi"], "openai-responses");
  assert.equal(o["modelBaseUrl"], "https://api.openai.com/v1");
  assert.equal(o["requesterThinkingLevel"], "low");
  assert.equal(o["agentId"], "main");
  assert.equal(o["sessionKey"], "agent:main:demo");
  assert.equal(o["runId"], "run-1");
  assert.equal(o["messageChannel"], "slack");
  assert.equal(o["workspaceDir"], "/ws");
  assert.equal(o["abortSignal"], signal);
  assert.equal(o["authProfileStore"], store, "the full store decides the tools' availability");
});

test("toolsAllow narrows the tool surface, and disabled tools build none", () => {
  const host = fakeHost({ tools: [tool("message", noop), tool("web_search", noop)] });
  assert.deepEqual(toolSurface(input({ hostCapabilities: host.caps, toolsAllow: ["web_search"] })).map((t) => t.name), ["web_search"]);
  assert.deepEqual(toolSurface(input({ hostCapabilities: host.caps, toolsAllow: [] })), []);
  const disabled = fakeHost({ tools: [tool("message", noop)] });
  assert.deepEqual(toolSurface(input({ hostCapabilities: disabled.caps, disableTools: true })), []);
  assert.equal(disabled.surfaceOptions.length, 0, "nothing is built for a turn without tools");
});

test("each tool is offered with its name, description and JSON-schema parameters", () => {
  assert.deepEqual(hostTools([tool("get_weather", noop, "the weather of a city")]), [{
    name: "get_weather", description: "the weather of a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  }]);
});

test("a host tool call runs the bound tool with the call's id and arguments, and its text and images become the result", async () => {
  const seen: unknown[] = [];
  const signal = new AbortController().signal;
  const weather = tool("get_weather", async (id, args, s) => {
    seen.push(id, args, s);
    return { content: [{ type: "text", text: "18°C" }, { type: "image", data: "AAAA", mimeType: "image/png" }], details: {} };
  });
  const body = await runHostTool([weather], { callId: "call_3", tool: "get_weather", arguments: { city: "Paris" } }, signal);
  assert.deepEqual(seen, ["call_3", { city: "Paris" }, signal]);
  assert.deepEqual(body, { callId: "call_3", content: [{ type: "text", text: "18°C" }, { type: "image", imageUrl: "data:image/png;base64,AAAA" }] });
});

test("media a tool made for the channel go back with its result, filtered as OpenClaw's own runtime filters them", async () => {
  const render = tool("render_chart", async () => ({
    content: [{ type: "text", text: "rendered" }],
    details: { media: { mediaUrls: ["https://media.example/chart-1.png", "/var/openclaw/media/chart-1.png"] } },
  }));
  const body = await runHostTool([render], { callId: "c9", tool: "render_chart", arguments: {} });
  // A local file of a tool OpenClaw does not trust with local media stays on
  // the gateway (filterToolResultMediaUrls), as in an embedded run.
  assert.deepEqual(body.mediaUrls, ["https://media.example/chart-1.png"]);
  const quiet = tool("render_chart", async () => ({
    content: [{ type: "text", text: "rendered" }],
    details: { media: { outbound: false, mediaUrls: ["https://media.example/chart-2.png"] } },
  }));
  assert.equal((await runHostTool([quiet], { callId: "c10", tool: "render_chart", arguments: {} })).mediaUrls, undefined,
    "media the tool keeps to itself are not delivered");
});

test("a tool that throws, or one the attempt did not offer, is an error result the model is told", async () => {
  const failing = tool("get_weather", async () => {
    throw new Error("no such city");
  });
  assert.deepEqual(await runHostTool([failing], { callId: "c1", tool: "get_weather", arguments: {} }), {
    callId: "c1", isError: true, errorMessage: "no such city",
  });
  const unknown = await runHostTool([failing], { callId: "c2", tool: "exec", arguments: {} });
  assert.equal(unknown.isError, true);
  assert.match(unknown.errorMessage ?? "", /exec is not a tool of this OpenClaw attempt/);
});
