// What the harness registration declares about OpenClaw's tool policy and
// its auth (OpenClaw's SDK contract, "Native tool-policy enforcement" and
// "Harness-owned auth bootstrap").
import type * as wire from "./wire.js";

/**
 * conversationToolPolicySafeDenyTools: the OpenClaw tools whose denial the
 * cluster's Codex harnesses enforce by themselves on every model, so that
 * OpenClaw need not isolate the native surface for them. Why each name is
 * safe is its SafeDeny* constant's comment (internal/contract/wire/safedeny.go,
 * emitted into wire.ts); the compiler keeps this list equal to that one.
 * OpenClaw passes the denies it covered as pluginHarnessToolPolicySafeDeniedTools
 * and the plugin sends them as a deny layer (turn-request.ts): the
 * dispatcher denies them on the selected harness, or refuses the turn with
 * ToolPolicyUnenforceable when that harness does not declare them safe.
 */
export const SAFE_DENY_TOOLS = [
  "web_search", "view_image", "ask_user", "web_fetch", "x_search",
  "dashboard", "canvas", "show_widget", "message", "heartbeat_respond",
  "automations", "gateway", "agents_list", "openclaw", "session_status",
  "progress_card", "skill_workshop", "music_generate", "video_generate", "tts",
] as const satisfies readonly wire.SafeDenyTool[];

// A SafeDenyTool of the wire package missing here fails the build.
type Missing = Exclude<wire.SafeDenyTool, (typeof SAFE_DENY_TOOLS)[number]>;
const complete: [Missing] extends [never] ? true : Missing = true;
void complete;
