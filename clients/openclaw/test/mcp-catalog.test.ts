import { test } from "node:test";
import assert from "node:assert/strict";

import { DispatcherClient } from "../src/client.js";
import { DispatcherError } from "../src/dispatcher-error.js";
import { createHarness } from "../src/harness.js";
import { inventory, LAUNCH_SUMMARY, type McpCatalogParams, mcpCatalog } from "../src/mcp-catalog.js";
import { jsonError, startLoopback } from "./loopback.js";

const LOOKUP = { name: "lookup", description: "Look a word up", inputSchema: { type: "object", properties: { word: { type: "string" } } } };

function catalogParams(extra: Partial<McpCatalogParams> = {}): McpCatalogParams {
  return {
    config: {}, agentId: "main", sessionId: "Weather:1", sessionKey: "agent:main:weather", workspaceDir: "/tmp/w",
    mcpServerNames: ["docs"], ...extra,
  } as McpCatalogParams;
}

test("the thread's inventory becomes OpenClaw's catalog: raw names, safe names, schemas, only the bounded servers", () => {
  const inv = inventory({
    threadId: "t-1",
    servers: [
      { name: "zz.tools", status: "connected", tools: [{ name: "b" }, { name: "a", description: "  " }] },
      { name: "docs", status: "connected", tools: [LOOKUP] },
      { name: "unbounded", status: "connected", tools: [{ name: "x" }] },
    ],
  });
  const got = mcpCatalog(inv, ["docs", "zz.tools"], undefined, 1234);
  assert.deepEqual(got, {
    version: 1,
    generatedAt: 1234,
    servers: {
      docs: { serverName: "docs", safeServerName: "docs", launchSummary: LAUNCH_SUMMARY, toolCount: 1 },
      "zz.tools": { serverName: "zz.tools", safeServerName: "zz-tools", launchSummary: LAUNCH_SUMMARY, toolCount: 2 },
    },
    tools: [
      { serverName: "docs", safeServerName: "docs", toolName: "lookup", description: "Look a word up", inputSchema: LOOKUP.inputSchema, fallbackDescription: "Look a word up" },
      { serverName: "zz.tools", safeServerName: "zz-tools", toolName: "a", inputSchema: { type: "object" }, fallbackDescription: "a" },
      { serverName: "zz.tools", safeServerName: "zz-tools", toolName: "b", inputSchema: { type: "object" }, fallbackDescription: "b" },
    ],
  });
});

test("safe names are assigned over the whole bounded set, so a server's does not depend on which others are connected", () => {
  const inv = inventory({ threadId: "t", servers: [{ name: "a-b", tools: [] }] });
  // "a.b" and "a-b" collide once sanitized; "a.b" comes first in the set.
  assert.equal(mcpCatalog(inv, ["a.b", "a-b"], undefined, 0).servers["a-b"]?.safeServerName, "a-b-2");
});

test("tools a session denies are kept apart in sessionDeniedTools, listed or not; a server's error is a diagnostic", () => {
  const inv = inventory({
    threadId: "t",
    servers: [
      { name: "docs", status: "connected", tools: [LOOKUP, { name: "define" }] },
      { name: "down", status: "failed", error: "connection refused", tools: [] },
    ],
  });
  const got = mcpCatalog(inv, ["docs", "down"], { mcpToolsDeny: { docs: ["define", "purge"] } }, 0);
  assert.deepEqual(got.tools.map((t) => t.toolName), ["lookup"]);
  assert.deepEqual(got.sessionDeniedTools?.map((t) => [t.toolName, t.deniedBySession]), [["define", true], ["purge", true]]);
  assert.equal(got.servers["docs"]?.toolCount, 3);
  assert.deepEqual(got.diagnostics, [{ serverName: "down", safeServerName: "down", launchSummary: LAUNCH_SUMMARY, message: "connection refused" }]);
});

test("a malformed inventory is an error naming its field", () => {
  assert.throws(() => inventory([]), /\(answer\): not a JSON object/);
  assert.throws(() => inventory({ servers: {} }), /servers: not an array/);
  assert.throws(() => inventory({ servers: [{ tools: [] }] }), /servers\[0\]\.name/);
  assert.throws(() => inventory({ servers: [{ name: "d", tools: [{}] }] }), /servers\[0\]\.tools\[0\]\.name/);
});

test("loadMcpToolCatalog reads the session's …/mcp-inventory with a GET and no body; no bound thread or no session is no live catalog; other failures are thrown", async () => {
  const answers: Array<[number, unknown]> = [
    [200, { threadId: "t-1", servers: [{ name: "docs", status: "connected", tools: [LOOKUP] }, { name: "other", tools: [] }] }],
    [404, { code: "NoNativeThread", message: "no bound native thread", scope: "", retryable: false }],
    [404, { code: "SessionNotFound", message: "no such session", scope: "", retryable: false }],
    [403, { code: "Forbidden", message: "may not get agentsessions/turns", scope: "", retryable: false }],
  ];
  let next = 0;
  const lb = await startLoopback((_req, res) => {
    const [status, body] = answers[next++] ?? [500, {}];
    if (status === 200) {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(body));
    } else jsonError(res, status, body);
  });
  try {
    const harness = createHarness(lb.config);
    const load = harness.loadMcpToolCatalog;
    assert.ok(load !== undefined, "the harness offers loadMcpToolCatalog");
    const catalog = await load(catalogParams());
    assert.deepEqual(catalog?.tools.map((t) => `${t.serverName}/${t.toolName}`), ["docs/lookup"], "only the bounded set");
    assert.deepEqual(Object.keys(catalog?.servers ?? {}), ["docs"]);
    const [req] = lb.requests;
    assert.equal(req?.method, "GET");
    assert.equal(req?.path, "/v1/namespaces/agents/agentsessions/weather-1/mcp-inventory");
    assert.equal(req?.body, "");
    assert.equal(req?.headers["authorization"], "Bearer token-1");

    assert.equal(await load(catalogParams()), undefined, "NoNativeThread");
    assert.equal(await load(catalogParams()), undefined, "SessionNotFound");
    await assert.rejects(load(catalogParams()), (err: unknown) => err instanceof DispatcherError && err.wire.code === "Forbidden");
  } finally {
    await lb.close();
  }
});

test("the client's inventory read is a DispatcherError with the dispatcher's code when refused", async () => {
  const lb = await startLoopback((_req, res) => jsonError(res, 404, { code: "NoNativeThread", message: "none", scope: "", retryable: false }));
  try {
    await assert.rejects(new DispatcherClient(lb.config).mcpInventory("demo"), (err: unknown) => err instanceof DispatcherError && err.status === 404);
  } finally {
    await lb.close();
  }
});
