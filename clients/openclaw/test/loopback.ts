// A loopback HTTPS server standing in for the dispatcher in client tests,
// with a self-signed certificate for 127.0.0.1 made by openssl for this run.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import type { PluginConfig } from "../src/config.js";

export type Recorded = { method: string; path: string; headers: IncomingMessage["headers"]; body: string };
export type Handler = (req: Recorded, res: ServerResponse) => void;

export type Loopback = {
  config: PluginConfig;
  dir: string;
  requests: Recorded[];
  setToken(token: string): void;
  close(): Promise<void>;
};

export async function startLoopback(handler: Handler): Promise<Loopback> {
  const dir = mkdtempSync(join(tmpdir(), "oc-dispatcher-"));
  const key = join(dir, "key.pem");
  const cert = join(dir, "cert.pem");
  try {
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
      "-addext", "subjectAltName=IP:127.0.0.1",
    ], { stdio: "pipe" });
  } catch (err) {
    throw new Error(`the client tests need openssl on PATH to make the loopback dispatcher's certificate (Debian: apt-get install openssl): ${String(err)}`);
  }
  const tokenFile = join(dir, "token");
  writeFileSync(tokenFile, "token-1\n");
  const requests: Recorded[] = [];
  const server: Server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const rec: Recorded = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body };
      requests.push(rec);
      handler(rec, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    config: { dispatcherUrl: `https://127.0.0.1:${port}`, caFile: cert, tokenFile, namespace: "agents", routes: [] },
    dir,
    requests,
    setToken: (token) => writeFileSync(tokenFile, token),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function sse(res: ServerResponse, events: Array<[number, string, unknown]>, runId = "gw-1"): void {
  res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": runId });
  for (const [id, event, data] of events) res.write(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  res.end();
}

export function jsonError(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body) + "\n");
}

/** Answers a tool result, approval or user-input post as the dispatcher does (202). */
export function accepted(res: ServerResponse, body: Record<string, unknown> = {}): void {
  res.writeHead(202, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ accepted: true, ...body }) + "\n");
}

/** Writes one event of a stream that stays open. */
export function write(res: ServerResponse, id: number, event: string, data: unknown): void {
  res.write(`id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
}

/**
 * A dispatcher whose turn (run gw-weather-0001 on Codex, turn token "tt")
 * calls the host tool get_weather with {city: "Paris"} (call_3) and waits:
 * once the tool's result is posted (answered 202), the turn's stream gets
 * rest and ends.
 */
export function startToolTurn(rest: Array<[number, string, unknown]>): Promise<Loopback> {
  let turn: ServerResponse | undefined;
  return startLoopback((req, res) => {
    if (req.path.endsWith("/turns")) {
      turn = res;
      res.writeHead(200, { "Content-Type": "text/event-stream", "X-Harness-Run-Id": "gw-weather-0001" });
      write(res, 1, "selected", { runId: "gw-weather-0001", turnToken: "tt", harnessId: "codex", runtime: "codex" });
      write(res, 2, "tool_call", { callId: "call_3", tool: "get_weather", arguments: { city: "Paris" } });
      return;
    }
    accepted(res);
    assert.ok(turn !== undefined, "a tool result came before the turn");
    for (const [id, event, data] of rest) write(turn, id, event, data);
    turn.end();
  });
}
