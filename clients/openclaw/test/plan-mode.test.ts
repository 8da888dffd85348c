// Plan mode: the `/plan` command, the mode's files, the session extension's
// cleanup, and the turn's collaborationMode that follows from them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { AgentHarnessPreflightError } from "openclaw/plugin-sdk/agent-harness-runtime";
import type { OpenClawPluginApi, OpenClawPluginCommandDefinition, PluginCommandContext, PluginSessionExtensionRegistration } from "openclaw/plugin-sdk/plugin-entry";

import { collaborationModeFields, readPlanModesFrom } from "../src/collaboration-mode.js";
import { parsePlanCommand, parsePlanMode, type PlanModeStore, planModeFiles, registerPlanMode } from "../src/plan-mode.js";
import { type AttemptInput, turnRequest } from "../src/turn-request.js";

const KEY = "agent:main:plan-e2e";

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), "plan-mode-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "plan-mode");
}

// The plugin registered on a stand-in of OpenClaw's API that keeps what
// it was given: the command, the session extension, the attempt's store.
function registered(dir: string) {
  let command: OpenClawPluginCommandDefinition | undefined;
  let extension: PluginSessionExtensionRegistration | undefined;
  let store: Pick<PlanModeStore, "read"> | undefined;
  const api = {
    registerCommand: (c: OpenClawPluginCommandDefinition) => {
      command = c;
    },
    session: { state: { registerSessionExtension: (e: PluginSessionExtensionRegistration) => {
      extension = e;
    } } },
  } as unknown as OpenClawPluginApi;
  registerPlanMode(api, dir, (s) => {
    store = s;
  });
  assert.ok(command !== undefined && extension !== undefined && store !== undefined, "the command, the extension and the attempt's store");
  const run = async (args: string, session: { key?: string } = { key: KEY }): Promise<string> => {
    const ctx = { args, sessionKey: session.key, commandBody: `/plan ${args}`, channel: "webchat", isAuthorizedSender: true } as unknown as PluginCommandContext;
    const result = await command!.handler(ctx);
    return result.text ?? "";
  };
  return { command: command!, extension: extension!, store: store!, run };
}

test("/plan's arguments", () => {
  const cases: Array<[string | undefined, ReturnType<typeof parsePlanCommand>]> = [
    [undefined, { kind: "show" }],
    ["", { kind: "show" }],
    [" status ", { kind: "show" }],
    ["on", { kind: "set", mode: "plan" }],
    ["ON", { kind: "set", mode: "plan" }],
    ["off", { kind: "set", mode: "default" }],
    ["maybe", { kind: "usage", unknown: "maybe" }],
    ["on now", { kind: "usage", unknown: "on now" }],
  ];
  for (const [args, want] of cases) assert.deepEqual(parsePlanCommand(args), want, `/plan ${args}`);
});

test("a stored mode is plan or default; anything else fails naming the field", () => {
  const cases: Array<[string, string | RegExp]> = [
    ['{"mode":"plan"}', "plan"],
    ['{"mode":"default"}', "default"],
    ['{"mode":"plann"}', /f\.json: mode: must be "plan" or "default", got "plann"/],
    ["{}", /mode: must be "plan" or "default", got nothing/],
    ['["plan"]', /mode: must be/],
    ["plan", /f\.json: not JSON/],
  ];
  for (const [text, want] of cases) {
    if (typeof want === "string") assert.equal(parsePlanMode(text, "f.json"), want, text);
    else assert.throws(() => parsePlanMode(text, "f.json"), want, text);
  }
});

test("/plan on puts the session's cluster turns in plan mode, /plan off takes them out, each session on its own", async (t) => {
  const dir = tempDir(t);
  const { run, store } = registered(dir);
  const restore = readPlanModesFrom(store);
  t.after(restore);
  const body = (sessionKey: string) => turnRequest({
    runId: "run-1", sessionId: "s-1", sessionKey, agentId: "main", provider: "openai", modelId: "gpt-5.5", prompt: "Plan the rollout",
  } as AttemptInput);

  assert.match(await run(""), /^Plan mode is off for this session's turns on the cluster/);
  assert.equal(body(KEY).collaborationMode, undefined, "a session never put in plan mode runs in the default mode: nothing is sent");

  assert.match(await run("on"), /^Plan mode is now on for this session's turns on the cluster: Codex runs them with its plan-mode instructions and may ask you questions/);
  assert.equal(body(KEY).collaborationMode, "plan");
  assert.equal(body("agent:main:other").collaborationMode, undefined, "another session keeps its own mode");
  assert.match(await run("status"), /^Plan mode is on/);
  const [file] = readdirSync(dir);
  assert.ok(file !== undefined);
  assert.equal(statSync(join(dir, file)).mode & 0o777, 0o600, "readable by the gateway's user only");

  assert.match(await run("off"), /^Plan mode is now off/);
  assert.equal(body(KEY).collaborationMode, undefined);
  assert.deepEqual(readdirSync(dir), [], "the default mode leaves no file behind");
});

test("the mode outlives the plugin instance that set it: a restarted gateway's plugin reads it", async (t) => {
  const dir = tempDir(t);
  await registered(dir).run("on");
  const restarted = registered(dir);
  assert.equal(restarted.store.read(KEY), "plan");
  assert.deepEqual(restarted.extension.project?.({ sessionKey: KEY, state: undefined }), { mode: "plan" }, "the Gateway's session row shows it");
});

test("OpenClaw's deletion of the session drops its mode; a reset, a gateway that stops or reloads the plugin keep it", async (t) => {
  const cases: Array<[Parameters<NonNullable<PluginSessionExtensionRegistration["cleanup"]>>[0], string]> = [
    [{ reason: "delete", sessionKey: KEY }, "default"],
    [{ reason: "delete", sessionKey: "agent:main:other" }, "plan"],
    [{ reason: "reset", sessionKey: KEY }, "plan"],
    [{ reason: "disable" }, "plan"],
    [{ reason: "restart" }, "plan"],
  ];
  for (const [ctx, want] of cases) {
    const dir = tempDir(t);
    const { run, extension, store } = registered(dir);
    await run("on");
    await extension.cleanup?.(ctx);
    assert.equal(store.read(KEY), want, JSON.stringify(ctx));
  }
});

test("a mode that cannot be read refuses the turn, naming the file; the command says so too", async (t) => {
  const dir = tempDir(t);
  const { run, store } = registered(dir);
  await run("on");
  const [file] = readdirSync(dir);
  writeFileSync(join(dir, file!), '{"mode":"later"}');
  const restore = readPlanModesFrom(store);
  t.after(restore);

  assert.throws(
    () => collaborationModeFields({ sessionKey: KEY }),
    (err: unknown) => err instanceof AgentHarnessPreflightError &&
      /plan mode of session agent:main:plan-e2e cannot be read, so the turn was not run: .*\.json: mode: must be "plan" or "default", got "later"/.test(err.message),
  );
  assert.match(await run("status"), /^Plan mode cannot be read: .*got "later"/);
  assert.match(await run("off"), /^Plan mode is now off/, "/plan off sets it again");
  assert.deepEqual(collaborationModeFields({ sessionKey: KEY }), {});
});

test("/plan without a session or with an unknown argument changes nothing and says why", async (t) => {
  const dir = tempDir(t);
  const { run, store } = registered(dir);
  assert.match(await run("on", {}), /came without one: nothing was changed/);
  assert.match(await run("later"), /^Unknown argument "later"\. Usage: \/plan on \| off \| status/);
  assert.equal(store.read(KEY), "default");
});

test("without the plugin's entry (a test, an inspection) no session has a mode", () => {
  const restore = readPlanModesFrom(undefined);
  try {
    assert.deepEqual(collaborationModeFields({ sessionKey: KEY }), {});
  } finally {
    restore();
  }
});
