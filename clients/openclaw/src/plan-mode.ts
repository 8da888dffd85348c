// Plan mode for an OpenClaw session's turns on the cluster, built on the
// host hooks OpenClaw's docs name for it: a chat command (`/plan on|off`)
// and a session extension (namespace `plan-mode`) that shows the mode in
// the Gateway's session rows and drops it when OpenClaw deletes the
// session. OpenClaw 2026.9.6 gives a harness no plan-mode signal of
// its own; the attempt reads this state (collaboration-mode.ts).
//
// Where the mode is kept: a file per session in OpenClaw's state
// directory, as for the transcript markers (marker-files.ts). The session
// entry's own plugin state does not survive the gateway: OpenClaw 2026.9.6
// retires every plugin when a gateway stops and clears its
// `pluginExtensions` from every unlocked session (reason "disable"), so a
// mode kept there would be gone after a restart and the next turn would
// run in the default mode, where Codex acts.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

import type { OpenClawPluginApi, OpenClawPluginCommandDefinition, PluginCommandResult } from "openclaw/plugin-sdk/plugin-entry";

/** The session extension's namespace. */
export const PLAN_MODE_NAMESPACE = "plan-mode";

export type PlanMode = "plan" | "default";

/** A stored mode that cannot be read or is not a mode: the turn is refused rather than run in another mode. */
export class PlanModeStateError extends Error {}

/** The sessions' modes, keyed by OpenClaw session key. */
export type PlanModeStore = {
  /** The session's mode; the default when none was set. Synchronous: the turn's body is built synchronously. */
  read(sessionKey: string): PlanMode;
  write(sessionKey: string, mode: PlanMode): Promise<void>;
};

/**
 * The stored value's mode: `{"mode": "plan"}` or `{"mode": "default"}`.
 * Anything else fails, naming the field, rather than leaving the turn in a
 * mode nobody chose.
 */
export function parsePlanMode(text: string, where: string): PlanMode {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new PlanModeStateError(`${where}: not JSON: ${(err as Error).message}`);
  }
  const mode = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>)["mode"] : undefined;
  if (mode !== "plan" && mode !== "default") {
    throw new PlanModeStateError(`${where}: mode: must be "plan" or "default", got ${JSON.stringify(mode) ?? "nothing"}`);
  }
  return mode;
}

/**
 * Modes as files in dir: one per session, named by a digest of the session
 * key, written whole (a temporary file renamed over it), readable by the
 * gateway's user only. The default mode is no file.
 */
export function planModeFiles(dir: string): PlanModeStore & { remove(sessionKey: string): Promise<void> } {
  const path = (key: string): string => join(dir, `${createHash("sha256").update(key).digest("hex").slice(0, 40)}.json`);
  return {
    read: (key) => {
      let text: string;
      try {
        text = readFileSync(path(key), "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return "default";
        throw new PlanModeStateError(`${path(key)}: ${(err as Error).message}`);
      }
      return parsePlanMode(text, path(key));
    },
    write: async (key, mode) => {
      if (mode === "default") return rm(path(key), { force: true });
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const tmp = `${path(key)}.${randomBytes(6).toString("hex")}.tmp`;
      await writeFile(tmp, JSON.stringify({ mode }), { mode: 0o600 });
      await rename(tmp, path(key));
    },
    remove: (key) => rm(path(key), { force: true }),
  };
}

export type PlanCommand = { kind: "set"; mode: PlanMode } | { kind: "show" } | { kind: "usage"; unknown?: string };

/** What `/plan <args>` asks for: on, off, nothing or status (the current mode); anything else is answered with the usage. */
export function parsePlanCommand(args: string | undefined): PlanCommand {
  const word = (args ?? "").trim();
  switch (word.toLowerCase()) {
    case "":
    case "status":
      return { kind: "show" };
    case "on":
      return { kind: "set", mode: "plan" };
    case "off":
      return { kind: "set", mode: "default" };
    default:
      return { kind: "usage", unknown: word };
  }
}

const USAGE = "Usage: /plan on | off | status. Plan mode applies to this session's turns on the cluster (harness-operator).";

/** The reply that says the session's mode: changed says the command just set it. */
export function planModeReply(mode: PlanMode, changed: boolean): string {
  if (mode === "plan") {
    return `Plan mode is ${changed ? "now " : ""}on for this session's turns on the cluster: Codex runs them with its plan-mode instructions and may ask you questions; answer one with your next message. /plan off ends it.`;
  }
  return `Plan mode is ${changed ? "now " : ""}off for this session's turns on the cluster: they run in Codex's default mode. /plan on starts it.`;
}

/** The `/plan` chat command over store. */
export function planCommand(store: PlanModeStore): OpenClawPluginCommandDefinition {
  return {
    name: "plan",
    description: "Plan mode for this session's turns on the cluster (harness-operator): /plan on | off | status",
    acceptsArgs: true,
    handler: async (ctx): Promise<PluginCommandResult> => {
      const cmd = parsePlanCommand(ctx.args);
      if (cmd.kind === "usage") return { text: cmd.unknown ? `Unknown argument "${cmd.unknown}". ${USAGE}` : USAGE };
      if (ctx.sessionKey === undefined || ctx.sessionKey === "") {
        return { text: "Plan mode belongs to a session, and this command came without one: nothing was changed." };
      }
      try {
        if (cmd.kind === "show") return { text: planModeReply(store.read(ctx.sessionKey), false) };
        await store.write(ctx.sessionKey, cmd.mode);
        return { text: planModeReply(store.read(ctx.sessionKey), true) };
      } catch (err) {
        return { text: `Plan mode ${cmd.kind === "show" ? "cannot be read" : "was not changed"}: ${(err as Error).message}` };
      }
    },
  };
}

/**
 * Registers the command and the session extension over the files in dir,
 * and hands the attempt the store to read modes from. OpenClaw without
 * these seams (a plugin inspection's partial API) gets none of them.
 */
export function registerPlanMode(api: OpenClawPluginApi, dir: string, useStore: (store: PlanModeStore) => void): void {
  const store = planModeFiles(dir);
  useStore(store);
  api.session?.state?.registerSessionExtension?.({
    namespace: PLAN_MODE_NAMESPACE,
    description: "Plan mode of the session's turns on the cluster (set with /plan on|off)",
    // The mode a Gateway client sees in the session's row.
    project: ({ sessionKey }) => {
      try {
        return { mode: store.read(sessionKey) };
      } catch {
        return undefined;
      }
    },
    // A deleted session's mode goes with it. The mode belongs to the
    // session key, like the session's other settings: a reset keeps it, and
    // so does a gateway that stops ("disable", no session key) or reloads
    // the plugin ("restart").
    cleanup: async ({ reason, sessionKey }) => {
      if (reason === "delete" && sessionKey !== undefined) await store.remove(sessionKey);
    },
  });
  api.registerCommand?.(planCommand(store));
}
