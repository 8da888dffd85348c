import { test } from "node:test";
import assert from "node:assert/strict";

import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";

import { createHarness } from "../src/harness.js";
import { forwardedMcpServers, type McpInput } from "../src/mcp-servers.js";
import { type AttemptInput, turnRequest } from "../src/turn-request.js";
import { attemptParams } from "./attempt-fixtures.js";
import { sse, startLoopback } from "./loopback.js";

const DOCS = { url: "https://mcp.example.com/tools/", transport: "streamable-http" };

function input(servers: Record<string, unknown> | undefined, extra: Partial<McpInput> = {}): McpInput {
  return { config: servers === undefined ? {} : { mcp: { servers } }, ...extra } as McpInput;
}

test("the servers OpenClaw's config names become the turn's mcpServers, with their filters, the session's toggles and denies, and timeouts", () => {
  const cases: Array<{ name: string; in: McpInput; want: unknown }> = [
    { name: "no mcp block", in: input(undefined), want: [] },
    { name: "one server", in: input({ docs: DOCS }), want: [{ name: "docs", url: DOCS.url }] },
    {
      name: "sorted by name, a disabled one left out",
      in: input({ zeta: { url: "https://z.example/" }, alpha: { url: "https://a.example/" }, off: { url: "https://o.example/", enabled: false } }),
      want: [{ name: "alpha", url: "https://a.example/" }, { name: "zeta", url: "https://z.example/" }],
    },
    {
      name: "the session's toggle wins over enabled, both ways",
      in: input({ on: { url: "https://on.example/", enabled: false }, docs: DOCS }, { toolOverrides: { mcpServers: { on: true, docs: false } } }),
      want: [{ name: "on", url: "https://on.example/" }],
    },
    {
      name: "toolFilter and the session's denies: enabledTools and disabledTools",
      in: input({ docs: { ...DOCS, toolFilter: { include: ["lookup", "define"], exclude: ["delete"] } } }, { toolOverrides: { mcpToolsDeny: { docs: ["purge", "delete"] } } }),
      want: [{ name: "docs", url: DOCS.url, enabledTools: ["lookup", "define"], disabledTools: ["delete", "purge"] }],
    },
    {
      name: "timeouts in whole milliseconds; approval modes that only allow more are OpenClaw's to keep",
      in: input({ docs: { ...DOCS, connectionTimeoutMs: 2500.2, requestTimeoutMs: 30000, supportsParallelToolCalls: true, codex: { defaultToolsApprovalMode: "approve" } } }),
      want: [{ name: "docs", url: DOCS.url, startupTimeoutMs: 2501, toolTimeoutMs: 30000 }],
    },
    { name: "tools off: none", in: input({ docs: DOCS }, { disableTools: true }), want: [] },
    { name: "an allowlist that reaches no MCP tool: none", in: input({ docs: DOCS }, { toolsAllow: ["read", "exec"] }), want: [] },
    { name: "an allowlist naming an MCP tool", in: input({ docs: DOCS }, { toolsAllow: ["docs__lookup"] }), want: [{ name: "docs", url: DOCS.url }] },
    { name: "a wildcard allowlist", in: input({ docs: DOCS }, { toolsAllow: ["*"] }), want: [{ name: "docs", url: DOCS.url }] },
  ];
  for (const c of cases) {
    const got = forwardedMcpServers(c.in);
    assert.ok("servers" in got, `${c.name}: ${JSON.stringify(got)}`);
    assert.deepEqual(got.servers, c.want, c.name);
  }
});

test("a server the wire cannot carry is refused, naming the server and its field", () => {
  const cases: Array<{ server: Record<string, unknown>; name?: string; field: RegExp }> = [
    { server: { command: "npx", args: ["docs-mcp"] }, field: /mcp\.servers\.docs\.command: a stdio server/ },
    { server: { transport: "stdio", url: "https://x.example/" }, field: /mcp\.servers\.docs\.transport: a stdio server/ },
    { server: { ...DOCS, transport: "sse" }, field: /mcp\.servers\.docs\.transport: .*SSE/ },
    { server: { transport: "streamable-http" }, field: /mcp\.servers\.docs\.url: is required/ },
    { server: { ...DOCS, headers: { Authorization: "Bearer ${DOCS_TOKEN}" } }, field: /mcp\.servers\.docs\.headers: .*Secrets/ },
    { server: { ...DOCS, auth: "oauth" }, field: /mcp\.servers\.docs\.auth: .*OAuth/ },
    { server: { ...DOCS, sslVerify: false }, field: /mcp\.servers\.docs\.sslVerify/ },
    { server: { ...DOCS, clientCert: "/etc/cert.pem" }, field: /mcp\.servers\.docs\.clientCert/ },
    { server: { ...DOCS, codex: { defaultToolsApprovalMode: "prompt" } }, field: /mcp\.servers\.docs\.codex\.defaultToolsApprovalMode/ },
    { server: { ...DOCS, toolFilter: { include: ["look*"] } }, field: /mcp\.servers\.docs\.toolFilter\.include: the pattern "look\*"/ },
    { server: DOCS, name: "docs.v2", field: /mcp\.servers\.docs\.v2: .*1 to 64 letters/ },
  ];
  for (const c of cases) {
    const name = c.name ?? "docs";
    const got = forwardedMcpServers(input({ [name]: c.server, other: { url: "https://o.example/" } }));
    assert.ok("refused" in got, `${JSON.stringify(c.server)} was forwarded`);
    assert.match(got.refused, c.field);
    assert.match(got.refused, /enabled: false/, "the message names the way out");
    assert.equal(got.server, name);
  }
  // A server the config disabled is not refused: it is not asked for.
  assert.deepEqual(forwardedMcpServers(input({ local: { command: "npx", enabled: false } })), { servers: [] });
});

test("the turn's body carries the forwarded servers, and they count in its runId", () => {
  const base = attemptParams() as unknown as AttemptInput;
  const withMcp = { ...base, config: { mcp: { servers: { docs: DOCS } } } } as AttemptInput;
  const body = turnRequest(withMcp);
  assert.deepEqual(body.mcpServers, [{ name: "docs", url: DOCS.url }]);
  assert.equal(turnRequest(base).mcpServers, undefined, "no servers: no field");
  assert.notEqual(turnRequest(base).runId, body.runId);
});

test("an attempt naming a server the wire cannot carry fails before anything is sent, without scope", async () => {
  const lb = await startLoopback((_req, res) => sse(res, [[1, "result", { terminal: { kind: "ok" } }]]));
  try {
    const p = attemptParams({ config: { mcp: { servers: { local: { command: "docs-mcp" } } } } });
    await assert.rejects(createHarness(lb.config).runAttempt(p), (err: unknown) => {
      assert.ok(err instanceof AgentHarnessPreflightError);
      assert.equal(err.scope, undefined, "no other candidate runs what the config asked for in its place");
      assert.match(err.message, /mcp\.servers\.local\.command/);
      return true;
    });
    assert.equal(lb.requests.length, 0, "nothing reached the dispatcher");
  } finally {
    await lb.close();
  }
});
