// SessionStore: the AgentSession of an OpenClaw session. runAttempt creates
// it (or finds it) before the turn and brings its spec.model (and the lock)
// to the attempt's, OpenClaw's reset bumps its spec.resetGeneration, and the
// session's deletion deletes it. The object is the one `kubectl harness
// session create` writes (cmd/kubectl-harness/session.go, runSessionCreate):
// the name from sessionName(sessionId) and a spec of agentId, sessionKey,
// sessionId and model (and modelSelectionLocked for a locked session), so a
// session made by either is the same session to the other.
import { HARNESS_API, KubeError, type KubeClient } from "./kube.js";
import { sessionName } from "./session-name.js";

/** The OpenClaw session an AgentSession belongs to (its immutable spec fields). */
export type SessionIdentity = { agentId: string; sessionKey: string; sessionId: string };

type AgentSession = {
  metadata: { name: string; uid?: string; resourceVersion?: string };
  spec: {
    agentId?: string;
    sessionKey?: string;
    sessionId?: string;
    model?: string;
    modelSelectionLocked?: string;
    resetGeneration?: number;
  };
};

/** The spec fields of an AgentSession that follow OpenClaw's session. */
export type SessionModel = {
  /** provider/model (see sessionModel). */
  model: string;
  /** OpenClaw's session is model-locked: spec.modelSelectionLocked is Locked. */
  locked: boolean;
};

// The value of spec.modelSelectionLocked that locks (api/v1alpha1).
const LOCKED = "Locked";

/**
 * An AgentSession of the plugin's name that belongs to another OpenClaw
 * session (ids that differ only in case or in replaced characters share a
 * name). The plugin never overwrites or deletes it.
 */
export class SessionConflictError extends Error {
  constructor(namespace: string, name: string, problems: string[]) {
    super(
      `AgentSession ${namespace}/${name} belongs to another OpenClaw session: ${problems.join("; ")}. ` +
        "The plugin does not change or delete it; delete it, or start a new OpenClaw session (another session id).",
    );
    this.name = "SessionConflictError";
  }
}

/**
 * The AgentSession's model cannot become the attempt's: the session is
 * model-locked on the cluster, or the API server (the manager's admission)
 * refused the update. Nothing ran; another model on this harness meets the
 * same session, so the refusal is local to the harness.
 */
export class SessionModelRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SessionModelRefusedError";
  }
}

// Optimistic writes (a resetGeneration bump, a model update) that lost to a
// concurrent writer.
const MAX_WRITE_ATTEMPTS = 3;

export class SessionStore {
  constructor(
    private readonly kube: KubeClient,
    private readonly namespace: string,
  ) {}

  /**
   * Creates the session's AgentSession, or finds it and brings it to want:
   * the dispatcher refuses an attempt whose model is not spec.model
   * (SessionMismatch), so a changed model (OpenClaw's /model, a fallback
   * model that also runs here) is written before the turn, with a merge
   * patch conditional on the resourceVersion read, retried when another
   * writer came first. A locked OpenClaw session locks the AgentSession;
   * the plugin never unlocks one (a lock set on the cluster is the
   * cluster's). A Locked AgentSession whose model differs, or an update the
   * API server refuses, is a SessionModelRefusedError naming the field.
   */
  async ensure(id: SessionIdentity, want: SessionModel): Promise<string> {
    const name = sessionName(id.sessionId);
    for (let attempt = 1; ; attempt++) {
      const found = await this.find(name);
      if (found === undefined) {
        if (await this.create(name, id, want)) return name;
        // Created meanwhile (a concurrent turn, or kubectl): it must be ours.
        if (attempt >= MAX_WRITE_ATTEMPTS) throw new KubeError(404, "NotFound", `AgentSession ${this.namespace}/${name} was created and deleted at once`);
        continue;
      }
      this.check(found, id);
      const change = modelChange(found.spec, want);
      if (change === undefined) return name;
      if ("refused" in change) throw new SessionModelRefusedError(`AgentSession ${this.namespace}/${name}: ${change.refused}`);
      try {
        await this.kube.mergePatch(this.path(name), { metadata: { resourceVersion: found.metadata.resourceVersion }, spec: change.patch });
        return name;
      } catch (err) {
        if (err instanceof KubeError && err.reason === "Conflict" && attempt < MAX_WRITE_ATTEMPTS) continue;
        if (err instanceof KubeError && (err.reason === "Invalid" || err.reason === "Forbidden")) {
          throw new SessionModelRefusedError(`updating AgentSession ${this.namespace}/${name} (${describe(found.spec, change.patch)}) was refused: ${err.message}`);
        }
        throw err;
      }
    }
  }

  // Creates the AgentSession; false when it exists already.
  private async create(name: string, id: SessionIdentity, want: SessionModel): Promise<boolean> {
    const spec: AgentSession["spec"] = { agentId: id.agentId, sessionKey: id.sessionKey, sessionId: id.sessionId, model: want.model };
    if (want.locked) spec.modelSelectionLocked = LOCKED;
    const object = { apiVersion: "harness.openclaw.dev/v1alpha1", kind: "AgentSession", metadata: { name, namespace: this.namespace }, spec };
    try {
      await this.kube.create(this.collection(), object);
      return true;
    } catch (err) {
      if (err instanceof KubeError && err.reason === "AlreadyExists") return false;
      throw err;
    }
  }

  /**
   * Bumps spec.resetGeneration (a merge patch conditional on the object's
   * resourceVersion, retried when another writer came first, so no bump is
   * lost): the session's next turn starts a new native thread. False when
   * the session has no AgentSession.
   */
  async reset(id: Partial<SessionIdentity> & { sessionId: string }): Promise<boolean> {
    const name = sessionName(id.sessionId);
    for (let attempt = 1; ; attempt++) {
      const found = await this.find(name);
      if (found === undefined) return false;
      this.check(found, id);
      try {
        await this.kube.mergePatch(this.path(name), {
          metadata: { resourceVersion: found.metadata.resourceVersion },
          spec: { resetGeneration: (found.spec.resetGeneration ?? 0) + 1 },
        });
        return true;
      } catch (err) {
        if (!(err instanceof KubeError && err.reason === "Conflict") || attempt >= MAX_WRITE_ATTEMPTS) throw err;
      }
    }
  }

  /**
   * Deletes the session's AgentSession, with its uid as a precondition so a
   * session recreated by someone else meanwhile is never deleted. False when
   * there is none.
   */
  async delete(id: SessionIdentity): Promise<boolean> {
    const name = sessionName(id.sessionId);
    const found = await this.find(name);
    if (found === undefined) return false;
    this.check(found, id);
    try {
      await this.kube.delete(this.path(name), { apiVersion: "v1", kind: "DeleteOptions", preconditions: { uid: found.metadata.uid } });
    } catch (err) {
      if (err instanceof KubeError && err.reason === "NotFound") return false;
      throw err;
    }
    return true;
  }

  private async find(name: string): Promise<AgentSession | undefined> {
    try {
      return await this.kube.get<AgentSession>(this.path(name));
    } catch (err) {
      if (err instanceof KubeError && err.reason === "NotFound") return undefined;
      throw err;
    }
  }

  // The fields given must equal the object's (each is immutable in the CRD).
  private check(found: AgentSession, id: Partial<SessionIdentity>): AgentSession {
    const problems: string[] = [];
    for (const field of ["agentId", "sessionKey", "sessionId"] as const) {
      const want = id[field];
      const got = found.spec[field];
      if (want !== undefined && got !== want) {
        problems.push(`spec.${field} is ${JSON.stringify(got ?? "")}, this session's is ${JSON.stringify(want)}`);
      }
    }
    if (problems.length > 0) throw new SessionConflictError(this.namespace, found.metadata.name, problems);
    return found;
  }

  private collection(): string {
    return `${HARNESS_API}/namespaces/${encodeURIComponent(this.namespace)}/agentsessions`;
  }

  private path(name: string): string {
    return `${this.collection()}/${encodeURIComponent(name)}`;
  }
}

/**
 * What an AgentSession's spec needs for an attempt on want: nothing, a merge
 * patch of spec, or a refusal (its model cannot change while it is Locked).
 * Models compare as the dispatcher compares them (selection SplitModel):
 * the provider exactly, the model id case-insensitively.
 */
export function modelChange(
  spec: { model?: string; modelSelectionLocked?: string },
  want: SessionModel,
): undefined | { patch: { model?: string; modelSelectionLocked?: string } } | { refused: string } {
  const locked = spec.modelSelectionLocked === LOCKED;
  const patch: { model?: string; modelSelectionLocked?: string } = {};
  if (!sameModel(spec.model ?? "", want.model)) {
    if (locked) {
      return {
        refused:
          `its model selection is Locked (spec.modelSelectionLocked), so spec.model ${JSON.stringify(spec.model ?? "")} ` +
          `cannot change to ${JSON.stringify(want.model)}; use ${JSON.stringify(spec.model ?? "")} or start a new session`,
      };
    }
    patch.model = want.model;
  }
  if (want.locked && !locked) patch.modelSelectionLocked = LOCKED;
  return Object.keys(patch).length === 0 ? undefined : { patch };
}

// The fields a patch changes, for an error message.
function describe(spec: { model?: string }, patch: { model?: string; modelSelectionLocked?: string }): string {
  const parts: string[] = [];
  if (patch.model !== undefined) parts.push(`spec.model ${JSON.stringify(spec.model ?? "")} → ${JSON.stringify(patch.model)}`);
  if (patch.modelSelectionLocked !== undefined) parts.push(`spec.modelSelectionLocked → ${patch.modelSelectionLocked}`);
  return parts.join(", ");
}

function sameModel(a: string, b: string): boolean {
  const split = (m: string): [string, string] => {
    const slash = m.indexOf("/");
    return slash < 0 ? ["", m] : [m.slice(0, slash), m.slice(slash + 1)];
  };
  const [ap, am] = split(a);
  const [bp, bm] = split(b);
  return ap.toLowerCase() === bp.toLowerCase() && am.toLowerCase() === bm.toLowerCase();
}

/**
 * The session's spec.model: provider/model, as the dispatcher splits it
 * (internal/policy/selection SplitModel): a model id that already starts with its
 * provider keeps it once.
 */
export function sessionModel(provider: string, modelId: string): string {
  const p = provider.trim().toLowerCase();
  const m = modelId.trim();
  if (p === "") return m;
  if (m.length > p.length && m[p.length] === "/" && m.slice(0, p.length).toLowerCase() === p) return `${p}/${m.slice(p.length + 1)}`;
  return `${p}/${m}`;
}
