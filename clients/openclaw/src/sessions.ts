// SessionStore: the AgentSession of an OpenClaw session. runAttempt creates
// it (or finds it) before the turn, OpenClaw's reset bumps its
// spec.resetGeneration, and the session's deletion deletes it. The object is
// the one `kubectl harness session create` writes (cmd/kubectl-harness/
// session.go, runSessionCreate): the name from sessionName(sessionId) and a
// spec of agentId, sessionKey, sessionId and model, nothing else, so a
// session made by either is the same session to the other.
import { HARNESS_API, KubeError, type KubeClient } from "./kube.js";
import { sessionName } from "./session-name.js";

/** The OpenClaw session an AgentSession belongs to (its immutable spec fields). */
export type SessionIdentity = { agentId: string; sessionKey: string; sessionId: string };

type AgentSession = {
  metadata: { name: string; uid?: string; resourceVersion?: string };
  spec: { agentId?: string; sessionKey?: string; sessionId?: string; model?: string; resetGeneration?: number };
};

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

// Optimistic bumps of resetGeneration that lost to a concurrent writer.
const MAX_RESET_ATTEMPTS = 3;

export class SessionStore {
  constructor(
    private readonly kube: KubeClient,
    private readonly namespace: string,
  ) {}

  /**
   * Creates the session's AgentSession, or finds it. model is provider/model
   * (see sessionModel); it is written only at creation: a session whose model
   * changed since is the dispatcher's to judge (SessionMismatch names spec.model).
   */
  async ensure(id: SessionIdentity, model: string): Promise<string> {
    const name = sessionName(id.sessionId);
    const found = await this.find(name);
    if (found !== undefined) return this.check(found, id).metadata.name;
    const object = {
      apiVersion: "harness.openclaw.dev/v1alpha1",
      kind: "AgentSession",
      metadata: { name, namespace: this.namespace },
      spec: { agentId: id.agentId, sessionKey: id.sessionKey, sessionId: id.sessionId, model },
    };
    try {
      await this.kube.create(this.collection(), object);
      return name;
    } catch (err) {
      // Created meanwhile (a concurrent turn, or kubectl): it must be ours.
      if (!(err instanceof KubeError && err.reason === "AlreadyExists")) throw err;
    }
    const raced = await this.find(name);
    if (raced === undefined) throw new KubeError(404, "NotFound", `AgentSession ${this.namespace}/${name} was created and deleted at once`);
    return this.check(raced, id).metadata.name;
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
        if (!(err instanceof KubeError && err.reason === "Conflict") || attempt >= MAX_RESET_ATTEMPTS) throw err;
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
