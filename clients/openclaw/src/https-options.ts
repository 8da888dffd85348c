// The request options of one HTTPS call to a service the plugin is
// configured with (the dispatcher, the Kubernetes API): its base URL's host
// and port (an IPv6 literal without brackets), the path below the base
// URL's own path, and the configured CA when there is one.
import type { RequestOptions } from "node:https";

export function httpsOptions(baseUrl: string, method: string, path: string, headers: Record<string, string>, ca: string | undefined): RequestOptions {
  const base = new URL(baseUrl);
  const options: RequestOptions = {
    method,
    protocol: "https:",
    hostname: base.hostname.replace(/^\[|\]$/g, ""),
    port: base.port === "" ? 443 : Number(base.port),
    path: base.pathname.replace(/\/+$/, "") + path,
    headers,
  };
  if (ca !== undefined) options.ca = ca;
  return options;
}
