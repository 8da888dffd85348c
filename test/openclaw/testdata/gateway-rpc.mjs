// gateway-rpc.mjs calls the suite's long-lived OpenClaw gateway with
// OpenClaw's own gateway client (callGatewayFromCli, what `openclaw gateway
// call` runs), loaded once: `openclaw gateway call` loads the whole CLI for
// every call, seconds each. It reads one JSON request per line on stdin,
// {"method": …, "params": …}, and answers each, in order, with one line on
// stdout that starts with the marker below and holds {"result": …} or
// {"error": …}. Anything else the client prints is not an answer.
//
// Usage: node gateway-rpc.mjs <file URL of openclaw's plugin-sdk/gateway-runtime.js>
import { createInterface } from "node:readline";

const marker = "@@gateway-rpc ";
const { callGatewayFromCli } = await import(process.argv[2]);
for await (const line of createInterface({ input: process.stdin })) {
  let answer;
  try {
    const { method, params } = JSON.parse(line);
    answer = { result: await callGatewayFromCli(method, { json: true, timeout: "60000" }, params) };
  } catch (err) {
    answer = { error: String(err?.stack ?? err) };
  }
  process.stdout.write(marker + JSON.stringify(answer) + "\n");
}
