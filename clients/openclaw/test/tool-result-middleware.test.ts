import { test } from "node:test";
import assert from "node:assert/strict";

import {
  AgentHarnessPreflightError,
  type AgentToolResultMiddleware,
  type AgentToolResultMiddlewareContext,
  type AgentToolResultMiddlewareEvent,
} from "openclaw/plugin-sdk/agent-harness-runtime";

import { createHarness } from "../src/harness.js";
import {
  assertNoNativeMiddleware,
  hostToolMiddleware,
  nativeCoverage,
  readRegisteredMiddleware,
  registryState,
} from "../src/tool-result-middleware.js";
import { runHostTool } from "../src/tools.js";
import { attemptParams as params } from "./attempt-fixtures.js";
import { fakeHost, tool } from "./host.js";
import { accepted, startLoopback, startToolTurn } from "./loopback.js";

// OpenClaw's active plugin registry, with these middleware registrations
// and owners, and its registry state (Symbol.for("openclaw.pluginRegistryState")).
function registryOf(middlewares: unknown[], owners: unknown[] = []): Record<string, unknown> {
  return { agentToolResultMiddlewares: middlewares, agentToolResultMiddlewareOwners: owners };
}

function state(middlewares: unknown[], owners: unknown[] = []): unknown {
  return { activeRegistry: registryOf(middlewares, owners) };
}

// A registration as OpenClaw's loader keeps it (registerAgentToolResultMiddleware).
function registration(pluginId: string, runtimes: string[], matcher?: string[]): Record<string, unknown> {
  return {
    pluginId, pluginName: pluginId, runtimes, handler: async () => undefined, rawHandler: async () => undefined,
    scopes: [{ runtimes, ...(matcher === undefined ? {} : { matcher }) }],
  };
}

// [what, state, the refusal's reasons as patterns: none means the turn runs]
const COVERAGE: Array<[string, unknown, RegExp[]]> = [
  ["no active registry: no middleware", { activeRegistry: null }, []],
  ["an empty registry", state([]), []],
  ["a codex middleware whose matcher names only host tools", state([registration("probe", ["codex"], ["probe_lookup", "session_status"])]), []],
  ["a middleware for OpenClaw's embedded runtime only, without a matcher", state([registration("embedded-only", ["openclaw"])]), []],
  ["a codex middleware without a matcher covers every tool",
    state([registration("redactor", ["openclaw", "codex"])]), [/plugin "redactor" covers every tool \(no matcher\)/]],
  ["a matcher naming exec", state([registration("shell-audit", ["codex"], ["exec"])]), [/plugin "shell-audit" covers exec/]],
  ["a matcher naming apply_patch and web_search beside a host tool",
    state([registration("m", ["codex"], ["apply_patch", "probe_lookup", "web_search"])]), [/plugin "m" covers apply_patch, web_search,/]],
  ["a matcher naming an MCP tool", state([registration("mcp-audit", ["codex"], ["docs__lookup"])]), [/plugin "mcp-audit" covers docs__lookup \(an MCP tool's name\)/]],
  ["a registration without scopes is one scope of its runtimes, every tool",
    state([{ pluginId: "old", runtimes: ["codex"], handler: () => undefined }]), [/plugin "old" covers every tool/]],
  ["one handler registered twice: the codex scope alone decides",
    state([{ pluginId: "two", runtimes: ["openclaw", "codex"], scopes: [{ runtimes: ["openclaw"] }, { runtimes: ["codex"], matcher: ["probe_lookup"] }] }]), []],
  ["one handler registered twice, its codex scope naming exec",
    state([{ pluginId: "two", runtimes: ["openclaw", "codex"], scopes: [{ runtimes: ["openclaw"], matcher: ["exec"] }, { runtimes: ["codex"], matcher: ["exec"] }] }]),
    [/plugin "two" covers exec/]],
  ["each plugin covering native tools is named",
    state([registration("a", ["codex"]), registration("b", ["codex"], ["view_image"])]), [/plugin "a" covers every tool/, /plugin "b" covers view_image/]],
  ["a plugin declaring codex middleware with none of it loaded: its matcher is unknown",
    state([], [{ pluginId: "lazy", runtimes: ["codex"] }]), [/plugin "lazy" declares tool-result middleware for runtime codex, but none of it is loaded/]],
  ["a declared owner whose middleware is loaded", state([registration("probe", ["codex"], ["probe_lookup"])], [{ pluginId: "probe", runtimes: ["codex"] }]), []],
  ["an owner for the embedded runtime only", state([], [{ pluginId: "embedded-only", runtimes: ["openclaw"] }]), []],
  ["no registry state at all", undefined, [/could not be read \(OpenClaw's plugin registry state is missing or not an object\)/]],
  ["a registry without its middleware list", { activeRegistry: { agentToolResultMiddlewareOwners: [] } },
    [/could not be read \(activeRegistry\.agentToolResultMiddlewares is not an array\)/]],
  ["a registry without its owners", { activeRegistry: { agentToolResultMiddlewares: [] } },
    [/could not be read \(activeRegistry\.agentToolResultMiddlewareOwners is not an array\)/]],
  ["a registration without a plugin id", state([{ runtimes: ["codex"] }]), [/agentToolResultMiddlewares\[0\]\.pluginId is not a plugin id/]],
  ["a registration whose runtimes are not a list", state([{ pluginId: "x", runtimes: "codex" }]), [/agentToolResultMiddlewares\[0\]\.runtimes is not a list/]],
  ["a matcher that is not a list of names", state([{ pluginId: "x", runtimes: ["codex"], scopes: [{ runtimes: ["codex"], matcher: "probe_lookup" }] }]),
    [/agentToolResultMiddlewares\[0\]\.scopes\[0\]\.matcher is not a list of tool names/]],
  ["an empty matcher", state([{ pluginId: "x", runtimes: ["codex"], scopes: [{ runtimes: ["codex"], matcher: [] }] }]),
    [/scopes\[0\]\.matcher is not a list of tool names/]],
  ["an owner without runtimes", state([], [{ pluginId: "x" }]), [/agentToolResultMiddlewareOwners\[0\]\.runtimes is not a list/]],
];

for (const [what, s, want] of COVERAGE) {
  test(`native coverage: ${what}`, () => {
    const reasons = nativeCoverage(readRegisteredMiddleware(s));
    assert.equal(reasons.length, want.length, reasons.join("\n"));
    for (const [i, re] of want.entries()) assert.match(reasons[i] ?? "", re);
  });
}

test("a middleware covering a native tool refuses the attempt with a preflight error naming its plugin, without scope", () => {
  assert.throws(() => assertNoNativeMiddleware(state([registration("shell-audit", ["codex"], ["exec"])])), (err: unknown) => {
    assert.ok(err instanceof AgentHarnessPreflightError);
    assert.match(err.message, /^harness-operator refuses the turn: the tool-result middleware of plugin "shell-audit" covers exec, and Codex hands a native tool's output to the model directly/);
    assert.equal(err.scope, undefined, "OpenClaw's fallback chain ends: the turn does not run elsewhere without the middleware");
    assert.match(err.userMessage ?? "", /covers tools the cluster's agent harness runs natively/);
    return true;
  });
  assert.doesNotThrow(() => assertNoNativeMiddleware(state([registration("probe", ["codex"], ["probe_lookup"])])));
});

test("the registry state of the OpenClaw this process loaded is one the plugin reads", () => {
  assert.deepEqual(nativeCoverage(readRegisteredMiddleware(registryState())), []);
});

const ctxOf = { runId: "gw-weather-0001", sessionId: "Weather:1", sessionKey: "agent:main:weather", agentId: "main" };

// A middleware that records what it saw and replaces "raw" by "REWRITTEN" in every text.
function rewriter(seen: Array<[AgentToolResultMiddlewareEvent, AgentToolResultMiddlewareContext]>): AgentToolResultMiddleware {
  return (event, ctx) => {
    seen.push([event, ctx]);
    return {
      result: {
        ...event.result,
        content: event.result.content.map((c) => (c.type === "text" ? { ...c, text: c.text.replaceAll("raw", "REWRITTEN") } : c)),
      },
    };
  };
}

test("a host tool's result goes through the codex middleware before it is posted, with the attempt's run and session", async () => {
  const seen: Array<[AgentToolResultMiddlewareEvent, AgentToolResultMiddlewareContext]> = [];
  const weather = tool("get_weather", async () => ({ content: [{ type: "text", text: "raw 18°C" }], details: { source: "test" } }));
  const body = await runHostTool([weather], { callId: "call_3", tool: "get_weather", arguments: { city: "Paris" } }, undefined,
    hostToolMiddleware(ctxOf, [rewriter(seen)]));
  assert.deepEqual(body, { callId: "call_3", content: [{ type: "text", text: "REWRITTEN 18°C" }] });
  assert.equal(seen.length, 1);
  const [event, ctx] = seen[0] ?? [];
  assert.deepEqual(ctx, { runtime: "codex", ...ctxOf });
  assert.equal(event?.toolCallId, "call_3");
  assert.equal(event?.toolName, "get_weather");
  assert.deepEqual(event?.args, { city: "Paris" });
  assert.equal(event?.isError, false);
  assert.deepEqual(event?.result.content, [{ type: "text", text: "raw 18°C" }]);
});

test("a thrown error goes through the middleware too, and is posted as the tool's error", async () => {
  const seen: Array<[AgentToolResultMiddlewareEvent, AgentToolResultMiddlewareContext]> = [];
  const failing = tool("get_weather", async () => {
    throw new Error("raw token abc in the error");
  });
  const body = await runHostTool([failing], { callId: "c1", tool: "get_weather", arguments: {} }, undefined, hostToolMiddleware(ctxOf, [rewriter(seen)]));
  assert.deepEqual(body, { callId: "c1", isError: true, errorMessage: "REWRITTEN token abc in the error" });
  assert.equal(seen[0]?.[0].isError, true);
});

// [what, the middleware, what the model is told instead of the raw output]
const FAILURES: Array<[string, AgentToolResultMiddleware, RegExp]> = [
  ["a middleware that throws", () => {
    throw new Error("boom");
  }, /^Tool output unavailable due to post-processing error\.$/],
  ["a middleware that returns no content list", () => ({ result: { content: "raw secret" } as never }), /^Tool output unavailable due to post-processing error\.$/],
];

for (const [what, mw, told] of FAILURES) {
  test(`${what} withholds the tool's output (OpenClaw's runner answers for it)`, async () => {
    const secret = tool("lookup", async () => ({ content: [{ type: "text", text: "raw secret" }], details: {} }));
    const body = await runHostTool([secret], { callId: "c", tool: "lookup", arguments: {} }, undefined, hostToolMiddleware(ctxOf, [mw]));
    assert.equal(body.content?.length, 1);
    const c = body.content?.[0];
    assert.ok(c?.type === "text");
    assert.match(c.text ?? "", told);
    assert.doesNotMatch(JSON.stringify(body), /raw secret/);
  });
}

test("a runner that fails withholds the tool's output, as an error naming the tool", async () => {
  const secret = tool("lookup", async () => ({ content: [{ type: "text", text: "raw secret" }], details: {} }));
  const body = await runHostTool([secret], { callId: "c", tool: "lookup", arguments: {} }, undefined, {
    apply: () => Promise.reject(new Error("cannot load the middleware")),
  });
  assert.deepEqual(body, {
    callId: "c", isError: true,
    errorMessage: "harness-operator: OpenClaw's tool-result middleware failed on lookup's result, which is withheld: cannot load the middleware",
  });
});

test("media the tool delivered are read from its own result, whatever the middleware keeps of it", async () => {
  const render = tool("render_chart", async () => ({
    content: [{ type: "text", text: "raw chart" }],
    details: { media: { mediaUrls: ["https://media.example/chart-1.png"] } },
  }));
  const dropDetails: AgentToolResultMiddleware = () => ({ result: { content: [{ type: "text", text: "summarised" }], details: undefined } });
  const body = await runHostTool([render], { callId: "c9", tool: "render_chart", arguments: {} }, undefined, hostToolMiddleware(ctxOf, [dropDetails]));
  assert.deepEqual(body, { callId: "c9", content: [{ type: "text", text: "summarised" }], mediaUrls: ["https://media.example/chart-1.png"] });
});

test("without middleware the tool's result is posted as it returned it", async () => {
  const weather = tool("get_weather", async () => ({ content: [{ type: "text", text: "raw 18°C" }], details: {} }));
  const body = await runHostTool([weather], { callId: "c", tool: "get_weather", arguments: {} }, undefined, hostToolMiddleware(ctxOf, []));
  assert.deepEqual(body, { callId: "c", content: [{ type: "text", text: "raw 18°C" }] });
});

// The process-global registry state OpenClaw's runner reads, replaced for
// the duration of run (tests in this process run one at a time).
async function withRegistry<T>(registry: unknown, run: () => Promise<T>): Promise<T> {
  const key = Symbol.for("openclaw.pluginRegistryState");
  const g = globalThis as Record<symbol, unknown>;
  const s = g[key] as Record<string, unknown> | undefined;
  assert.ok(s !== undefined && "activeRegistry" in s, "OpenClaw's registry state exists in this process");
  const before = s["activeRegistry"];
  s["activeRegistry"] = registry;
  try {
    return await run();
  } finally {
    s["activeRegistry"] = before;
  }
}

test("a middleware registered in OpenClaw's registry rewrites the host tool's result the dispatcher receives", { timeout: 30_000 }, async () => {
  const lb = await startToolTurn([[3, "result", { runId: "gw-weather-0001", assistantTexts: ["ok"], terminal: { kind: "ok" }, agentHarnessId: "codex" }]]);
  try {
    const seen: Array<[AgentToolResultMiddlewareEvent, AgentToolResultMiddlewareContext]> = [];
    const reg = { ...registration("probe", ["codex"], ["get_weather"]), handler: rewriter(seen) };
    const weather = tool("get_weather", async () => ({ content: [{ type: "text", text: "raw 18°C" }], details: {} }));
    await withRegistry(registryOf([reg]), () =>
      createHarness(lb.config).runAttempt(params({ hostCapabilities: fakeHost({ tools: [weather] }).caps })));
    const posted = lb.requests.find((r) => r.path.endsWith("/tool-results"));
    assert.deepEqual(JSON.parse(posted?.body ?? "{}"), { callId: "call_3", content: [{ type: "text", text: "REWRITTEN 18°C" }] });
    assert.deepEqual(seen[0]?.[1], { runtime: "codex", ...ctxOf });
  } finally {
    await lb.close();
  }
});

test("an attempt a registered middleware cannot be honoured on is refused before its turn is sent", async () => {
  const lb = await startLoopback((_req, res) => accepted(res));
  try {
    const registry = registryOf([registration("shell-audit", ["codex"], ["exec"])]);
    await assert.rejects(withRegistry(registry, () => createHarness(lb.config).runAttempt(params())), (err: unknown) =>
      err instanceof AgentHarnessPreflightError && /plugin "shell-audit" covers exec/.test(err.message) && err.scope === undefined,
    );
    assert.equal(lb.requests.length, 0, "no turn was posted");
  } finally {
    await lb.close();
  }
});
