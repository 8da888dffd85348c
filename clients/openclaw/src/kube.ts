// KubeClient: the few Kubernetes API requests the plugin makes (AgentSessions,
// and the lists the cluster registry reads), over node:https. Like the
// dispatcher's client it reads the token and CA files on every request: the
// kubelet rotates a projected ServiceAccount token under the same path.
import { request } from "node:https";
import type { IncomingMessage } from "node:http";

import { type KubeSettings, readCA, readToken } from "./config.js";
import { httpsOptions } from "./https-options.js";

/** The API group and version of the operator's resources. */
export const HARNESS_API = "/apis/harness.openclaw.dev/v1alpha1";

// A request that takes longer is abandoned: a turn waits on session
// creation, and the registry's next refresh should not queue behind a hang.
const DEFAULT_TIMEOUT_MS = 10_000;
// A list page or object larger than this is not what these requests expect.
const MAX_BODY = 32 * 1024 * 1024;
// List pages: the API server's chunking keeps each answer bounded.
const PAGE_LIMIT = 250;
const MAX_PAGES = 40;

/** An error answer of the API server (status 0: it was not reached). */
export class KubeError extends Error {
  constructor(
    readonly status: number,
    /** The Status object's reason (NotFound, AlreadyExists, Conflict, Forbidden, …). */
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = "KubeError";
  }
}

export class KubeClient {
  constructor(
    private readonly settings: KubeSettings,
    private readonly timeoutMs = DEFAULT_TIMEOUT_MS,
  ) {}

  get<T>(path: string): Promise<T> {
    return this.send<T>("GET", path);
  }

  create<T>(path: string, body: object): Promise<T> {
    return this.send<T>("POST", path, body, "application/json");
  }

  /** A JSON merge patch (RFC 7386). */
  mergePatch<T>(path: string, body: object): Promise<T> {
    return this.send<T>("PATCH", path, body, "application/merge-patch+json");
  }

  /** Deletes with DeleteOptions (for example preconditions). */
  async delete(path: string, options: object): Promise<void> {
    await this.send<unknown>("DELETE", path, options, "application/json");
  }

  /** Every item of a list, page by page. */
  async list<T>(path: string): Promise<T[]> {
    const items: T[] = [];
    let next = "";
    for (let page = 0; page < MAX_PAGES; page++) {
      const query = new URLSearchParams({ limit: String(PAGE_LIMIT) });
      if (next !== "") query.set("continue", next);
      const list = await this.send<{ items?: T[]; metadata?: { continue?: string } }>("GET", `${path}?${query}`);
      items.push(...(list.items ?? []));
      next = list.metadata?.continue ?? "";
      if (next === "") return items;
    }
    throw new KubeError(0, "TooManyPages", `Kubernetes API: GET ${path}: more than ${MAX_PAGES * PAGE_LIMIT} items`);
  }

  private async send<T>(method: string, path: string, body?: object, contentType?: string): Promise<T> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string> = {
      Accept: "application/json",
      Authorization: `Bearer ${readToken(this.settings, "kubernetes.tokenFile")}`,
    };
    if (payload !== undefined && contentType !== undefined) {
      headers["Content-Type"] = contentType;
      headers["Content-Length"] = String(Buffer.byteLength(payload));
    }
    const options = httpsOptions(this.settings.server, method, path, headers, readCA(this.settings, "kubernetes.caFile"));
    const what = `Kubernetes API ${this.settings.server} (kubernetes.server): ${method} ${path}`;
    let res: IncomingMessage;
    let text: string;
    try {
      res = await new Promise<IncomingMessage>((resolve, reject) => {
        const req = request(options, resolve);
        req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
        req.on("error", reject);
        req.end(payload);
      });
      text = await readBody(res);
    } catch (err) {
      throw new KubeError(0, "Unreachable", `${what}: ${(err as Error).message}`);
    }
    const status = res.statusCode ?? 0;
    if (status >= 200 && status < 300) {
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new KubeError(status, "BadResponse", `${what}: HTTP ${status} with a body that is not JSON`);
      }
    }
    // The API server answers errors with a Status object; anything else is
    // something in between (a proxy, a wrong URL).
    let reason = `HTTP${status}`;
    let message = `HTTP ${status}`;
    try {
      const st = JSON.parse(text) as { reason?: unknown; message?: unknown };
      if (typeof st.reason === "string" && st.reason !== "") reason = st.reason;
      if (typeof st.message === "string" && st.message !== "") message = st.message;
    } catch {
      // Not a Status: keep the HTTP status.
    }
    throw new KubeError(status, reason, `${what}: ${status} ${reason}: ${message}`);
  }
}

async function readBody(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY) {
      res.destroy();
      throw new Error(`answer larger than ${MAX_BODY} bytes`);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString("utf8");
}
