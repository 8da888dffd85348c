// The plugin's configuration block (plugins.entries["harness-operator"].config
// in openclaw.json), parsed once at registration. Files named here are read
// on every request, never cached: a projected ServiceAccount token is
// rotated by the kubelet under the same path, and `make run` writes a new
// dispatcher CA at every start.
import { readFileSync } from "node:fs";

/** What supports() answers for a provider (and optionally one model). */
export type RouteSupport = {
  provider: string;
  model?: string;
  supported: boolean;
  priority?: number;
  reason?: string;
  fallbackRuntime?: "openclaw";
};

/** How the plugin reaches the Kubernetes API (sessions, the cluster registry). */
export type KubeSettings = {
  /** The API server's base URL (https), without a trailing slash. */
  server: string;
  caFile?: string;
  tokenFile: string;
  /** Seconds between the cluster registry's reads of harnesses and policies. */
  refreshSeconds: number;
};

/**
 * How a turn the dispatcher refused with a retryable code and a Retry-After
 * is sent again before it was claimed (start-retry.ts).
 */
export type RetrySettings = {
  /** Retries after the first refusal; 0 turns retrying off. */
  maxRetries: number;
  /** The longest Retry-After waited for; a longer one fails the attempt at once. */
  maxWaitSeconds: number;
};

export const DEFAULT_RETRY: Readonly<RetrySettings> = { maxRetries: 3, maxWaitSeconds: 30 };
const MAX_RETRIES = 20;
const MAX_WAIT_SECONDS = 600;

export type PluginConfig = {
  /** The dispatcher's API base URL, without a trailing slash. */
  dispatcherUrl: string;
  caFile?: string;
  tokenFile: string;
  namespace: string;
  routes: RouteSupport[];
  /** Absent outside a cluster when the block is not configured: no Kubernetes calls. */
  kubernetes?: KubeSettings;
  /** Absent: DEFAULT_RETRY. */
  retry?: RetrySettings;
};

/** A configuration problem; the message names the field. */
export class ConfigError extends Error {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`harness-operator plugin config: ${field}: ${problem}`);
    this.name = "ConfigError";
  }
}

const KNOWN_FIELDS = new Set(["dispatcherUrl", "caFile", "tokenFile", "namespace", "routes", "kubernetes", "retry"]);
const KNOWN_RETRY_FIELDS = new Set(["maxRetries", "maxWaitSeconds"]);
const KNOWN_KUBE_FIELDS = new Set(["server", "caFile", "tokenFile", "refreshSeconds"]);
// Where the kubelet mounts a Pod's ServiceAccount token and the cluster's CA.
const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
const DEFAULT_REFRESH_SECONDS = 30;
const MAX_REFRESH_SECONDS = 3600;
const KNOWN_ROUTE_FIELDS = new Set(["provider", "model", "supported", "priority", "reason", "fallbackRuntime"]);
// A Kubernetes namespace is a DNS-1123 label.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** env supplies the in-cluster defaults of the `kubernetes` block. */
export function parseConfig(raw: unknown, env: NodeJS.ProcessEnv = process.env): PluginConfig {
  const obj = asObject(raw, "(config)");
  rejectUnknown(obj, KNOWN_FIELDS, "");
  const dispatcherUrl = httpsBase(requiredString(obj, "dispatcherUrl"), "dispatcherUrl");
  const namespace = requiredString(obj, "namespace");
  if (namespace.length > 63 || !DNS_LABEL.test(namespace)) {
    throw new ConfigError("namespace", `${JSON.stringify(namespace)} is not a valid namespace (a DNS-1123 label)`);
  }
  const config: PluginConfig = {
    dispatcherUrl,
    tokenFile: requiredString(obj, "tokenFile"),
    namespace,
    routes: parseRoutes(obj["routes"]),
  };
  const caFile = optionalString(obj, "caFile");
  if (caFile !== undefined) config.caFile = caFile;
  const kubernetes = parseKubernetes(obj["kubernetes"], env);
  if (kubernetes !== undefined) config.kubernetes = kubernetes;
  if (obj["retry"] !== undefined) config.retry = parseRetry(obj["retry"]);
  return config;
}

// The `retry` block; an omitted field keeps its default.
function parseRetry(raw: unknown): RetrySettings {
  const obj = asObject(raw, "retry");
  rejectUnknown(obj, KNOWN_RETRY_FIELDS, "retry.");
  return {
    maxRetries: wholeNumber(obj["maxRetries"], "retry.maxRetries", 0, MAX_RETRIES, DEFAULT_RETRY.maxRetries),
    maxWaitSeconds: wholeNumber(obj["maxWaitSeconds"], "retry.maxWaitSeconds", 1, MAX_WAIT_SECONDS, DEFAULT_RETRY.maxWaitSeconds),
  };
}

function wholeNumber(raw: unknown, field: string, min: number, max: number, dflt: number): number {
  if (raw === undefined) return dflt;
  if (typeof raw !== "number" || !Number.isInteger(raw) || raw < min || raw > max) {
    throw new ConfigError(field, `must be a whole number from ${min} to ${max}`);
  }
  return raw;
}

// Both APIs are spoken over TLS only: a bearer token never goes in clear.
function httpsBase(value: string, field: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(field, `not a URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== "https:") {
    throw new ConfigError(field, `must be an https:// URL, got ${JSON.stringify(value)}`);
  }
  if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
    throw new ConfigError(field, "must not carry a query, fragment or user information");
  }
  return url.href.replace(/\/+$/, "");
}

// The `kubernetes` block. Inside a Pod (KUBERNETES_SERVICE_HOST/PORT set, as
// the kubelet does for every container) each field defaults to the in-cluster
// value, so an empty or absent block uses the Pod's ServiceAccount. Outside a
// cluster an absent block turns the Kubernetes side off (the stand-in and
// dispatcher-only setups), and a present one must name server and tokenFile.
function parseKubernetes(raw: unknown, env: NodeJS.ProcessEnv): KubeSettings | undefined {
  const host = env["KUBERNETES_SERVICE_HOST"];
  const port = env["KUBERNETES_SERVICE_PORT"];
  const inCluster = host !== undefined && host !== "" && port !== undefined && port !== "";
  if (raw === undefined && !inCluster) return undefined;
  const obj = raw === undefined ? {} : asObject(raw, "kubernetes");
  rejectUnknown(obj, KNOWN_KUBE_FIELDS, "kubernetes.");
  const outside = "is required outside a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)";
  let server = optionalString(obj, "server", "kubernetes.");
  let caFile = optionalString(obj, "caFile", "kubernetes.");
  if (server === undefined) {
    if (!inCluster) throw new ConfigError("kubernetes.server", outside);
    // An IPv6 service host needs brackets in a URL.
    server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
    caFile ??= `${SERVICE_ACCOUNT_DIR}/ca.crt`;
  }
  let tokenFile = optionalString(obj, "tokenFile", "kubernetes.");
  if (tokenFile === undefined) {
    if (!inCluster) throw new ConfigError("kubernetes.tokenFile", outside);
    tokenFile = `${SERVICE_ACCOUNT_DIR}/token`;
  }
  const settings: KubeSettings = {
    server: httpsBase(server, "kubernetes.server"),
    tokenFile,
    refreshSeconds: wholeNumber(obj["refreshSeconds"], "kubernetes.refreshSeconds", 1, MAX_REFRESH_SECONDS, DEFAULT_REFRESH_SECONDS),
  };
  if (caFile !== undefined) settings.caFile = caFile;
  return settings;
}

function parseRoutes(raw: unknown): RouteSupport[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new ConfigError("routes", "must be an array");
  return raw.map((item: unknown, i) => {
    const path = `routes[${i}]`;
    const obj = asObject(item, path);
    rejectUnknown(obj, KNOWN_ROUTE_FIELDS, `${path}.`);
    const supported = obj["supported"];
    if (typeof supported !== "boolean") throw new ConfigError(`${path}.supported`, "must be true or false");
    const route: RouteSupport = { provider: requiredString(obj, "provider", `${path}.`), supported };
    const model = optionalString(obj, "model", `${path}.`);
    if (model !== undefined) route.model = model;
    const reason = optionalString(obj, "reason", `${path}.`);
    if (reason !== undefined) route.reason = reason;
    const priority = obj["priority"];
    if (priority !== undefined) {
      if (typeof priority !== "number" || !Number.isFinite(priority)) {
        throw new ConfigError(`${path}.priority`, "must be a number");
      }
      route.priority = priority;
    }
    const fallback = obj["fallbackRuntime"];
    if (fallback !== undefined) {
      if (fallback !== "openclaw") throw new ConfigError(`${path}.fallbackRuntime`, 'must be "openclaw" when set');
      if (supported) throw new ConfigError(`${path}.fallbackRuntime`, "only an unsupported route names a fallback runtime");
      route.fallbackRuntime = "openclaw";
    }
    return route;
  });
}

/** The bearer token, read from tokenFile now (never cached, see above); field names it in errors. */
export function readToken(config: Pick<PluginConfig, "tokenFile">, field = "tokenFile"): string {
  let token: string;
  try {
    token = readFileSync(config.tokenFile, "utf8").trim();
  } catch (err) {
    throw new ConfigError(field, `cannot read ${config.tokenFile}: ${(err as Error).message}`);
  }
  if (token === "") throw new ConfigError(field, `${config.tokenFile} is empty`);
  return token;
}

/** The CA bundle, read from caFile now; undefined means the system's roots. */
export function readCA(config: Pick<PluginConfig, "caFile">, field = "caFile"): string | undefined {
  if (config.caFile === undefined) return undefined;
  try {
    return readFileSync(config.caFile, "utf8");
  } catch (err) {
    throw new ConfigError(field, `cannot read ${config.caFile}: ${(err as Error).message}`);
  }
}

function asObject(raw: unknown, field: string): Record<string, unknown> {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(field, "must be an object");
  }
  return raw as Record<string, unknown>;
}

function rejectUnknown(obj: Record<string, unknown>, known: Set<string>, prefix: string): void {
  for (const key of Object.keys(obj)) {
    if (!known.has(key)) throw new ConfigError(`${prefix}${key}`, "unknown field");
  }
}

function requiredString(obj: Record<string, unknown>, key: string, prefix = ""): string {
  const value = obj[key];
  if (value === undefined) throw new ConfigError(`${prefix}${key}`, "is required");
  if (typeof value !== "string" || value === "") throw new ConfigError(`${prefix}${key}`, "must be a non-empty string");
  return value;
}

function optionalString(obj: Record<string, unknown>, key: string, prefix = ""): string | undefined {
  const value = obj[key];
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value === "") throw new ConfigError(`${prefix}${key}`, "must be a non-empty string");
  return value;
}
