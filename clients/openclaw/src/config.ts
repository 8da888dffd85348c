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

export type PluginConfig = {
  /** The dispatcher's API base URL, without a trailing slash. */
  dispatcherUrl: string;
  caFile?: string;
  tokenFile: string;
  namespace: string;
  routes: RouteSupport[];
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

const KNOWN_FIELDS = new Set(["dispatcherUrl", "caFile", "tokenFile", "namespace", "routes"]);
const KNOWN_ROUTE_FIELDS = new Set(["provider", "model", "supported", "priority", "reason", "fallbackRuntime"]);
// A Kubernetes namespace is a DNS-1123 label.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function parseConfig(raw: unknown): PluginConfig {
  const obj = asObject(raw, "(config)");
  rejectUnknown(obj, KNOWN_FIELDS, "");
  const dispatcherUrl = requiredString(obj, "dispatcherUrl");
  let url: URL;
  try {
    url = new URL(dispatcherUrl);
  } catch {
    throw new ConfigError("dispatcherUrl", `not a URL: ${JSON.stringify(dispatcherUrl)}`);
  }
  // The dispatcher serves its API over TLS only; a bearer token never goes in clear.
  if (url.protocol !== "https:") {
    throw new ConfigError("dispatcherUrl", `must be an https:// URL, got ${JSON.stringify(dispatcherUrl)}`);
  }
  if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
    throw new ConfigError("dispatcherUrl", "must not carry a query, fragment or user information");
  }
  const namespace = requiredString(obj, "namespace");
  if (namespace.length > 63 || !DNS_LABEL.test(namespace)) {
    throw new ConfigError("namespace", `${JSON.stringify(namespace)} is not a valid namespace (a DNS-1123 label)`);
  }
  const config: PluginConfig = {
    dispatcherUrl: url.href.replace(/\/+$/, ""),
    tokenFile: requiredString(obj, "tokenFile"),
    namespace,
    routes: parseRoutes(obj["routes"]),
  };
  const caFile = optionalString(obj, "caFile");
  if (caFile !== undefined) config.caFile = caFile;
  return config;
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

/** The bearer token, read from tokenFile now (never cached, see above). */
export function readToken(config: Pick<PluginConfig, "tokenFile">): string {
  let token: string;
  try {
    token = readFileSync(config.tokenFile, "utf8").trim();
  } catch (err) {
    throw new ConfigError("tokenFile", `cannot read ${config.tokenFile}: ${(err as Error).message}`);
  }
  if (token === "") throw new ConfigError("tokenFile", `${config.tokenFile} is empty`);
  return token;
}

/** The CA bundle, read from caFile now; undefined means the system's roots. */
export function readCA(config: Pick<PluginConfig, "caFile">): string | undefined {
  if (config.caFile === undefined) return undefined;
  try {
    return readFileSync(config.caFile, "utf8");
  } catch (err) {
    throw new ConfigError("caFile", `cannot read ${config.caFile}: ${(err as Error).message}`);
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
