// ClusterRegistry keeps, in memory, the cluster's AgentHarnesses visible to
// the gateway's namespace and the RuntimePolicies selecting it, so that the
// synchronous supports(ctx) can predict the cluster's decision (predict.ts).
// It polls: three reads (every AgentHarness, every RuntimePolicy, the
// namespace's labels) every refreshSeconds, sooner after a failure with a
// doubling back-off bounded by that interval. Polling rather than watching
// keeps one code path and needs no resync logic; supports() tolerates a
// snapshot that is an interval old, since the dispatcher decides anyway.
// Its timers are unref'd: a one-shot `openclaw agent exec` is not kept alive.
import type { AgentHarnessSupport } from "openclaw/plugin-sdk/agent-harness-runtime";

import type { AgentHarness, LabelSelector, Namespace, RuntimePolicy } from "./cluster-types.js";
import { HARNESS_API, type KubeClient } from "./kube.js";
import { predict, type RegistryView } from "./predict.js";
import type { SupportQuestion } from "./registry.js";

// A snapshot older than this many intervals is stale: refreshes kept failing.
const STALE_INTERVALS = 3;
const FIRST_RETRY_MS = 1000;
// The label the API server sets on every namespace (snapshot.go namespaceNameLabel).
const NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name";

export type RegistryOptions = {
  /** The clock, in milliseconds (tests). */
  now?: () => number;
  /** Called after each refresh with its error, if any (logging, tests). */
  onRefresh?: (err: Error | undefined) => void;
};

type Snapshot = { harnesses: AgentHarness[]; policies: RuntimePolicy[]; at: number };

export class ClusterRegistry {
  private snapshot: Snapshot | undefined;
  private lastError: string | undefined;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  // idle until the first question; stopped for good by stop() (dispose).
  private phase: "idle" | "running" | "stopped" = "idle";
  private readonly now: () => number;

  constructor(
    private readonly kube: KubeClient,
    private readonly namespace: string,
    private readonly intervalMs: number,
    private readonly options: RegistryOptions = {},
  ) {
    this.now = options.now ?? Date.now;
  }

  /** Starts the background refresh, the first one at once (supports() calls it). */
  start(): void {
    if (this.phase !== "idle") return;
    this.phase = "running";
    this.schedule(0);
  }

  stop(): void {
    this.phase = "stopped";
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** One refresh: the snapshot is replaced only when all three reads succeeded. */
  async refresh(): Promise<void> {
    try {
      const ns = this.namespace;
      const [harnesses, policies, namespace] = await Promise.all([
        this.kube.list<AgentHarness>(`${HARNESS_API}/agentharnesses`),
        this.kube.list<RuntimePolicy>(`${HARNESS_API}/runtimepolicies`),
        this.kube.get<Namespace>(`/api/v1/namespaces/${encodeURIComponent(ns)}`),
      ]);
      const labels = { ...namespace.metadata.labels };
      labels[NAMESPACE_NAME_LABEL] ??= ns;
      this.snapshot = {
        harnesses: harnesses.filter((h) => harnessVisible(h, ns, labels)),
        policies: policies.filter((p) => matches(p.spec.namespaceSelector, labels, `RuntimePolicy ${p.metadata.name}: spec.namespaceSelector`)),
        at: this.now(),
      };
      this.lastError = undefined;
      this.failures = 0;
    } catch (err) {
      this.lastError = (err as Error).message;
      this.failures++;
      throw err;
    }
  }

  /** What supports() reads: the snapshot, or why it cannot be trusted. */
  view(): RegistryView {
    const s = this.snapshot;
    const error = this.lastError === undefined ? "" : `; last error: ${this.lastError}`;
    if (s === undefined) return { state: "empty", detail: `not read yet${error}` };
    const age = this.now() - s.at;
    if (age > STALE_INTERVALS * this.intervalMs) return { state: "stale", detail: `last read ${Math.round(age / 1000)} s ago${error}` };
    return { state: "fresh", harnesses: s.harnesses, policies: s.policies };
  }

  // The first question starts the refresh: loading the plugin for a command
  // that runs no turn (`openclaw plugins inspect`) makes no request.
  supports(ctx: SupportQuestion): AgentHarnessSupport {
    this.start();
    const q: Parameters<typeof predict>[1] = { provider: ctx.provider };
    if (ctx.modelId !== undefined) q.modelId = ctx.modelId;
    if (ctx.modelProvider !== undefined) q.route = ctx.modelProvider;
    return predict(this.view(), q);
  }

  private schedule(delayMs: number): void {
    if (this.phase !== "running") return;
    this.timer = setTimeout(() => {
      this.refresh().then(
        () => this.options.onRefresh?.(undefined),
        (err: unknown) => this.options.onRefresh?.(err as Error),
      ).finally(() => {
        // After a failure: 1 s, 2 s, 4 s, … never longer than the interval.
        this.schedule(this.failures === 0 ? this.intervalMs : Math.min(FIRST_RETRY_MS * 2 ** (this.failures - 1), this.intervalMs));
      });
    }, delayMs);
    this.timer.unref();
  }
}

/**
 * visibility.go HarnessVisible: the harness admits the namespace
 * (spec.allowedNamespaces: Same, the default, its own; All; Selector) and a
 * namespace other than the harness's own consents with the label
 * accept.harness.openclaw.dev/<harness namespace>: "true".
 */
export function harnessVisible(h: AgentHarness, namespace: string, labels: Record<string, string>): boolean {
  const own = h.metadata.namespace === namespace;
  const an = h.spec.allowedNamespaces;
  let admitted: boolean;
  switch (an?.from || "Same") {
    case "Same":
      admitted = own;
      break;
    case "All":
      admitted = true;
      break;
    case "Selector":
      // A Selector without a selector admits nothing.
      admitted = an?.selector !== undefined && matches(an.selector, labels, `AgentHarness ${h.metadata.namespace}/${h.metadata.name}: spec.allowedNamespaces.selector`);
      break;
    default:
      admitted = false; // a mode this build does not know
  }
  return admitted && (own || labels[`accept.harness.openclaw.dev/${h.metadata.namespace ?? ""}`] === "true");
}

/**
 * Whether labels match a label selector (absent or empty: everything). An
 * invalid selector throws naming the field, and fails the whole refresh as it
 * fails the Go snapshot (snapshot.go SnapshotFor): a policy is never dropped
 * silently.
 */
export function matches(sel: LabelSelector | undefined, labels: Record<string, string>, field: string): boolean {
  if (sel === undefined) return true;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const values = e.values ?? [];
    switch (e.operator) {
      case "In":
        if (values.length === 0) throw new Error(`${field}: operator In needs values`);
        if (!has || !values.includes(labels[e.key] ?? "")) return false;
        break;
      case "NotIn":
        if (values.length === 0) throw new Error(`${field}: operator NotIn needs values`);
        if (has && values.includes(labels[e.key] ?? "")) return false;
        break;
      case "Exists":
        if (!has) return false;
        break;
      case "DoesNotExist":
        if (has) return false;
        break;
      default:
        throw new Error(`${field}: unknown operator ${JSON.stringify(e.operator)}`);
    }
  }
  return true;
}
