// A loopback HTTPS server playing the Kubernetes API for the requests the
// plugin makes: AgentSessions (get, create, merge patch with a resourceVersion
// precondition and the admission rule that a Locked session keeps its model,
// delete with a uid precondition), the lists of AgentHarnesses
// and RuntimePolicies, and one Namespace. Not the API server: it answers as
// the API server documents for these requests only (the lead's e2e test runs
// the real one). Requests under /v1/ (the dispatcher's) go to `dispatcher`.
import type { ServerResponse } from "node:http";

import type { KubeSettings, PluginConfig } from "../src/config.js";
import { jsonError, type Recorded, startLoopback } from "./loopback.js";

export type StoredSession = {
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string };
  spec: Record<string, unknown>;
};

export type FakeKube = {
  config: PluginConfig & { kubernetes: KubeSettings };
  requests: Recorded[];
  sessions: Map<string, StoredSession>;
  harnesses: object[];
  policies: object[];
  namespaceLabels: Record<string, string>;
  /** Runs before each request is answered: another writer acting at that moment. */
  beforeHandling?: (req: Recorded) => void;
  /** Answers the next request to a path ending so with this status and Status reason instead. */
  failNext(suffix: string, status: number, reason: string): void;
  setToken(token: string): void;
  close(): Promise<void>;
};

const SESSIONS = /^\/apis\/harness\.openclaw\.dev\/v1alpha1\/namespaces\/([^/]+)\/agentsessions(?:\/([^/?]+))?$/;

export async function startFakeKube(dispatcher?: (req: Recorded, res: ServerResponse) => void): Promise<FakeKube> {
  const sessions = new Map<string, StoredSession>();
  const failures: Array<{ suffix: string; status: number; reason: string }> = [];
  let version = 1;
  const fake: Pick<FakeKube, "harnesses" | "policies" | "namespaceLabels" | "beforeHandling"> = {
    harnesses: [],
    policies: [],
    namespaceLabels: {},
  };
  const status = (res: ServerResponse, code: number, reason: string, message: string): void =>
    jsonError(res, code, { kind: "Status", apiVersion: "v1", status: "Failure", reason, message, code });
  const json = (res: ServerResponse, code: number, body: unknown): void => {
    res.writeHead(code, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const lb = await startLoopback((req, res) => {
    fake.beforeHandling?.(req);
    const path = req.path.split("?")[0] ?? "";
    const failure = failures.findIndex((f) => path.endsWith(f.suffix));
    if (failure >= 0) {
      const [f] = failures.splice(failure, 1);
      if (f !== undefined) return status(res, f.status, f.reason, `injected ${f.reason}`);
    }
    if (path.startsWith("/v1/")) {
      if (dispatcher === undefined) return status(res, 404, "NotFound", "no dispatcher here");
      return dispatcher(req, res);
    }
    if (path === "/apis/harness.openclaw.dev/v1alpha1/agentharnesses") return json(res, 200, { items: fake.harnesses, metadata: {} });
    if (path === "/apis/harness.openclaw.dev/v1alpha1/runtimepolicies") return json(res, 200, { items: fake.policies, metadata: {} });
    if (path === "/api/v1/namespaces/agents") return json(res, 200, { metadata: { name: "agents", labels: fake.namespaceLabels } });
    const m = SESSIONS.exec(path);
    if (m === null) return status(res, 404, "NotFound", `the fake does not serve ${path}`);
    const name = decodeURIComponent(m[2] ?? "");
    const stored = sessions.get(name);
    switch (req.method) {
      case "GET":
        return stored === undefined ? status(res, 404, "NotFound", `agentsessions "${name}" not found`) : json(res, 200, stored);
      case "POST": {
        const body = JSON.parse(req.body) as { metadata: { name: string }; spec: Record<string, unknown> };
        if (sessions.has(body.metadata.name)) return status(res, 409, "AlreadyExists", `agentsessions "${body.metadata.name}" already exists`);
        const created: StoredSession = {
          metadata: { name: body.metadata.name, namespace: m[1] ?? "", uid: `uid-${version}`, resourceVersion: String(version++) },
          spec: body.spec,
        };
        sessions.set(created.metadata.name, created);
        return json(res, 201, created);
      }
      case "PATCH": {
        if (stored === undefined) return status(res, 404, "NotFound", `agentsessions "${name}" not found`);
        if (req.headers["content-type"] !== "application/merge-patch+json") return status(res, 415, "UnsupportedMediaType", "merge patches only");
        const patch = JSON.parse(req.body) as { metadata?: { resourceVersion?: string }; spec?: Record<string, unknown> };
        const rv = patch.metadata?.resourceVersion;
        if (rv !== undefined && rv !== stored.metadata.resourceVersion) {
          return status(res, 409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again");
        }
        // The manager's validating webhook (internal/manager/webhook/agentsession.go): a Locked session keeps its model.
        const model = patch.spec?.["model"];
        if (stored.spec["modelSelectionLocked"] === "Locked" && model !== undefined && model !== stored.spec["model"]) {
          return status(res, 422, "Invalid",
            `admission webhook denied the request: AgentSession.harness.openclaw.dev "${name}" is invalid: ` +
              "spec.model: Forbidden: the session's model selection is Locked (spec.modelSelectionLocked); the model cannot change");
        }
        stored.spec = { ...stored.spec, ...patch.spec };
        stored.metadata.resourceVersion = String(version++);
        return json(res, 200, stored);
      }
      case "DELETE": {
        if (stored === undefined) return status(res, 404, "NotFound", `agentsessions "${name}" not found`);
        const opts = JSON.parse(req.body || "{}") as { preconditions?: { uid?: string } };
        if (opts.preconditions?.uid !== undefined && opts.preconditions.uid !== stored.metadata.uid) {
          return status(res, 409, "Conflict", "Precondition failed: UID in precondition does not match the UID in record");
        }
        sessions.delete(name);
        return json(res, 200, { kind: "Status", status: "Success" });
      }
    }
    return status(res, 405, "MethodNotAllowed", req.method);
  });
  const kubernetes: KubeSettings = { server: lb.config.dispatcherUrl, tokenFile: lb.config.tokenFile, refreshSeconds: 30 };
  if (lb.config.caFile !== undefined) kubernetes.caFile = lb.config.caFile;
  return Object.assign(fake, {
    config: { ...lb.config, kubernetes },
    requests: lb.requests,
    sessions,
    failNext: (suffix: string, code: number, reason: string) => void failures.push({ suffix, status: code, reason }),
    setToken: lb.setToken,
    close: lb.close,
  });
}
