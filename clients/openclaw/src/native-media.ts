// Native media: an artifact the cluster's runtime created and persisted
// itself (an image Codex generated), whose bytes the dispatcher streams as
// a `media` event. The result's toolMediaUrls and hostOwnedToolMediaUrls
// name it by a `native-media:` URL that nothing can fetch; the plugin hands
// the bytes to OpenClaw's params.hostCapabilities.prepareReplyMedia (the
// contract's "Reply attachments from a remote workspace": the host applies
// the sender's read policy and the channel's byte limit, then saves them
// for delivery) and puts the saved media in the result instead.
//
// Without the capability (an OpenClaw that does not offer it, or an
// attempt without a workspace) or when the host refuses the bytes, the
// image is not delivered: an agent event on the warning stream says so,
// and the result names nothing in its place — never the unfetchable URL.
import type { AgentHarnessAttemptParamsV2 } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { NativeMedia as WireNativeMedia } from "./wire.js";
import type { Received } from "./wire-shapes.js";

/** The payload of a `media` event, as received. */
export type NativeMedia = Received<WireNativeMedia>;

/** wire.NativeMediaScheme: the prefix of a native artifact's URL in the result's media lists. */
export const NATIVE_MEDIA_SCHEME = "native-media:";

/** wire.NativeMediaMaxBytes: the dispatcher delivers no larger artifact; a larger `media` event is refused here too. */
export const NATIVE_MEDIA_MAX_BYTES = 8 << 20;

/** The workspace-relative path an artifact is offered to OpenClaw under (no gateway file is ever read). */
const MEDIA_DIR = ".harness-operator/native-media";

type HostCapabilities = NonNullable<AgentHarnessAttemptParamsV2["hostCapabilities"]>;
type PrepareReplyMedia = NonNullable<HostCapabilities["prepareReplyMedia"]>;

/** What of the prepared attempt saving media needs (absent in tests that drive a projection alone). */
export type MediaParams = Partial<Pick<AgentHarnessAttemptParamsV2, "hostCapabilities" | "abortSignal">>;

/** One `media` event, as the attempt result needs it. */
export type NativeMediaItem = {
  /** The event's URL: what the dispatcher's result names it by. */
  url: string;
  callId: string;
  tool: string;
  mimeType: string;
  /** The bytes, base64 (for the tool result's image in messagesSnapshot). */
  data: string;
  /** Where OpenClaw saved it for delivery; absent when it was not delivered. */
  mediaUrl?: string;
  /** Why it was not delivered. */
  failure?: string;
};

/**
 * Checks a `media` event and has OpenClaw save its bytes. Never throws: a
 * failure is in the item, which is undefined only for an event that is not
 * a native artifact at all.
 */
export async function prepareNativeMedia(p: MediaParams, m: NativeMedia): Promise<NativeMediaItem | undefined> {
  if (typeof m.url !== "string" || !m.url.startsWith(NATIVE_MEDIA_SCHEME)) return undefined;
  const item: NativeMediaItem = { url: m.url, callId: m.callId ?? "", tool: m.tool ?? "", mimeType: m.mimeType ?? "", data: "" };
  const bytes = decode(m);
  if (typeof bytes === "string") return { ...item, failure: bytes };
  item.data = m.data ?? "";
  const prepare = p.hostCapabilities?.prepareReplyMedia;
  if (typeof prepare !== "function") {
    return { ...item, failure: "this OpenClaw offers the attempt no prepareReplyMedia host capability, so the image cannot be saved for delivery" };
  }
  try {
    const mediaUrl = await saved(prepare, `${MEDIA_DIR}/${fileName(m)}`, bytes, p.abortSignal);
    return mediaUrl === undefined ? { ...item, failure: "OpenClaw did not accept the image for delivery (its media read policy or byte limit)" } : { ...item, mediaUrl };
  } catch (err) {
    return { ...item, failure: `OpenClaw could not save the image for delivery: ${(err as Error).message}` };
  }
}

/** The event's bytes, or why they are refused. */
function decode(m: NativeMedia): Buffer | string {
  if (typeof m.data !== "string" || m.data === "") return "the media event carries no bytes";
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(m.data) || m.data.length % 4 !== 0) return "the media event's data is not standard base64";
  const bytes = Buffer.from(m.data, "base64");
  if (bytes.length > NATIVE_MEDIA_MAX_BYTES) return `the image is ${bytes.length} bytes, over the ${NATIVE_MEDIA_MAX_BYTES}-byte limit`;
  if (m.size !== undefined && m.size !== bytes.length) return `the media event says ${m.size} bytes but carries ${bytes.length}`;
  return bytes;
}

/** The event's file name as a single path component (the dispatcher's, checked again). */
function fileName(m: NativeMedia): string {
  const name = (m.fileName ?? "").replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "");
  return name === "" ? "image" : name;
}

/**
 * Offers the bytes as the only file of a reply payload: OpenClaw reads it
 * through readWorkspaceFile (bounded by its maxBytes, under its read
 * policy) and answers the payload with the saved media's location.
 */
async function saved(prepare: PrepareReplyMedia, relativePath: string, bytes: Buffer, signal: AbortSignal | undefined): Promise<string | undefined> {
  const request: Parameters<PrepareReplyMedia>[0] = {
    kind: "payload",
    payload: { mediaUrls: [relativePath], mediaUrl: relativePath },
    readWorkspaceFile: async (path, options) => {
      options.signal.throwIfAborted();
      if (path.replace(/^\.\//, "") !== relativePath) throw new Error(`no such file: ${path}`);
      if (bytes.length > options.maxBytes) throw new Error(`the image is ${bytes.length} bytes, over OpenClaw's ${options.maxBytes}-byte limit`);
      return bytes;
    },
  };
  if (signal !== undefined) request.signal = signal;
  const out = await prepare(request);
  if (out.kind !== "payload") return undefined;
  const urls = out.payload.mediaUrls ?? (out.payload.mediaUrl === undefined ? [] : [out.payload.mediaUrl]);
  // A refused file leaves the payload without media (and a failure notice
  // in its text, which the attempt does not deliver).
  return urls.find((u) => u !== relativePath);
}

/**
 * The result's media lists with each native artifact replaced by where
 * OpenClaw saved it, and left out when it was not delivered.
 * hostOwnedToolMediaUrls holds only delivered native artifacts, each also
 * in toolMediaUrls (the contract).
 */
export function resolveMediaUrls(
  toolMediaUrls: readonly string[] | undefined,
  hostOwned: readonly string[] | undefined,
  media: ReadonlyMap<string, NativeMediaItem>,
): { toolMediaUrls?: string[]; hostOwnedToolMediaUrls?: string[] } {
  const map = (u: string): string | undefined => (u.startsWith(NATIVE_MEDIA_SCHEME) ? media.get(u)?.mediaUrl : u);
  const out: { toolMediaUrls?: string[]; hostOwnedToolMediaUrls?: string[] } = {};
  if (toolMediaUrls !== undefined) out.toolMediaUrls = toolMediaUrls.map(map).filter((u): u is string => u !== undefined);
  const owned = (hostOwned ?? [])
    .filter((u) => u.startsWith(NATIVE_MEDIA_SCHEME) && toolMediaUrls?.includes(u) === true)
    .map(map)
    .filter((u): u is string => u !== undefined);
  if (hostOwned !== undefined || owned.length > 0) out.hostOwnedToolMediaUrls = owned;
  return out;
}
