package engine

import (
	"context"
	"errors"
	"path"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

// prepared is a turn ready to run: its decision, harness, server and
// connection.
type prepared struct {
	decision    wire.Decision
	harness     *v1alpha1.AgentHarness
	server      Server
	conn        serverConn
	client      *appserver.Client
	session     string // SessionKey
	reserved    string // the server pod whose place the session holds (reserve), "" for none
	keepsPlace  bool   // the session held that place before this turn
	tenant      string // the namespace place this turn took (capacity.go), "" for none
	rebind      bool
	pod         bool                 // the server is a managed pod (not external)
	mcpServers  []adapter.MCPServer  // the turn's admitted MCP servers (mcp.go)
	authProfile *adapter.AuthProfile // the turn's admitted auth profile (auth_profile.go)
	// modelCredential is the model gateway's credential of the turn, on a
	// harness with spec.modelGateway (modelgateway.go); never logged.
	modelCredential string
	// mirror, when the session's thread is on another harness, is its
	// conversation from the transcript mirror; mirrorDropped counts older
	// messages left out (mirror.go).
	mirror        []wire.GatewayMessage
	mirrorDropped int
}

// prepare is step 4 of Start: nothing it does starts a thread or a turn. A
// refusal after selection is a *refusal that carries the decision.
func (e *Engine) prepare(ctx context.Context, sess *v1alpha1.AgentSession, req *wire.TurnRequest) (*prepared, error) {
	p, terr := e.decide(ctx, sess, req)
	if terr == nil {
		terr = e.loadMirror(sess, p)
	}
	if terr == nil {
		terr = e.place(ctx, sess, req, p)
	}
	switch {
	case terr == nil:
		return p, nil
	case p == nil:
		recordRefused(labelsOf(sess.Namespace, wire.Decision{}), terr.Code)
		return nil, terr
	}
	recordRefused(labelsOf(sess.Namespace, p.decision), terr.Code)
	return nil, &refusal{err: terr, decision: &p.decision}
}

// refusal is a turn refused after selection: its error (what it unwraps to,
// and all the API answers) and the decision, which Turn streams as the
// `selected` event the turn would have had. The decision never goes into
// the error's JSON.
type refusal struct {
	err      *wire.Error
	decision *wire.Decision
}

func (r *refusal) Error() string { return r.err.Error() }

func (r *refusal) Unwrap() error { return r.err }

// decide selects the turn's harness and checks what needs no server: the
// embedded runtime, the expected harness, the adapter, the binding, the
// transcript.
func (e *Engine) decide(ctx context.Context, sess *v1alpha1.AgentSession, req *wire.TurnRequest) (*prepared, *wire.Error) {
	snap, d, err := e.selectTurn(ctx, sess, &req.Attempt)
	if err != nil {
		return nil, wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "read the selection inputs: %v", err)
	}
	e.logDecision(sess, &req.Attempt, d)
	p := &prepared{decision: d, session: SessionKey(sess)}
	if d.Error != nil {
		terr := *d.Error // the decision keeps its own copy
		return p, &terr
	}
	if d.HarnessID == "" || d.HarnessRef == nil || d.Runtime == string(v1alpha1.RuntimeOpenClaw) {
		return p, wire.Errorf(wire.CodeEmbeddedRuntimeSelected, wire.ScopeHarness,
			"The decision for this turn is the embedded openclaw runtime (reason %s); run it on the gateway's embedded runtime.", d.Reason)
	}
	if exp := req.ExpectedRuntimeArtifact; exp != nil && exp.HarnessID != "" && selection.NormalizeRuntimeID(exp.HarnessID) != d.HarnessID {
		return p, wire.Errorf(wire.CodeArtifactMismatch, wire.ScopeHarness,
			"Verified inference requires agent harness %s, but %s was selected.", exp.HarnessID, d.HarnessID)
	}
	h, err := e.decidedHarness(ctx, snap, d)
	if err != nil {
		return p, wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness,
			"read AgentHarness %s/%s: %v", d.HarnessRef.Namespace, d.HarnessRef.Name, err)
	}
	p.harness, p.pod = h, h.Spec.External == nil
	if h.Spec.Adapter != v1alpha1.AdapterCodexAppServer {
		return p, wire.Errorf(wire.CodeHarnessUnsupported, wire.ScopeHarness,
			"AgentHarness %s/%s uses adapter %q, which this dispatcher cannot drive.", h.Namespace, h.Name, h.Spec.Adapter)
	}
	binding := sess.Status.NativeBinding
	// A binding of another harness (the decision moved the session: an
	// unlocked session's pin takes no part) is no thread to resume here.
	p.rebind = binding == nil || binding.Generation != sess.Spec.ResetGeneration ||
		(binding.HarnessName != "" && (binding.HarnessNamespace != h.Namespace || binding.HarnessName != h.Name))
	if terr := trustedBinding(sess); terr != nil {
		return p, terr
	}
	if !p.rebind {
		return p, e.checkTranscript(sess)
	}
	return p, nil
}

// checkTranscript refuses a turn on a full transcript mirror before it
// starts, instead of interrupting it mid-answer (a reset starts a new one).
func (e *Engine) checkTranscript(sess *v1alpha1.AgentSession) *wire.Error {
	session := SessionKey(sess)
	full, err := e.store.TranscriptFull(session)
	if err != nil {
		return wire.Errorf(wire.CodeHarnessUnavailable, "", "read the transcript mirror of AgentSession %s: %v", session, err)
	}
	if full {
		return wire.Errorf(wire.CodeTranscriptLimitExceeded, "",
			"the transcript mirror of AgentSession %s is full; reset the session (/reset bumps spec.resetGeneration) to start a new one", session)
	}
	return nil
}

// place chooses the turn's server (PickServer), checks the expected runtime
// artifact against it and opens the pooled connection.
func (e *Engine) place(ctx context.Context, sess *v1alpha1.AgentSession, req *wire.TurnRequest, p *prepared) *wire.Error {
	h, binding := p.harness, sess.Status.NativeBinding
	pods, err := e.serverPods(ctx, h)
	if err != nil {
		return wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "list the app-server pods: %v", err)
	}
	if binding != nil && !p.rebind && h.Spec.External != nil && binding.Pod != ExternalServerName {
		return wire.Errorf(wire.CodeNativeThreadLost, "",
			"app-server pod %s, where this session's native thread lived, no longer serves AgentHarness %s/%s; reset the session (/reset bumps spec.resetGeneration) to start a new thread",
			binding.Pod, h.Namespace, h.Name)
	}
	srv, serr := PickServer(h, pods, binding, p.rebind)
	if serr != nil {
		return serr
	}
	if terr := checkArtifact(h, srv, req.ExpectedRuntimeArtifact, p.decision.HarnessID); terr != nil {
		return terr
	}
	if terr := e.reserve(ctx, sess, p, srv); terr != nil {
		return terr
	}
	if p.conn, err = e.serverConn(ctx, h, srv); err != nil {
		e.unreserve(p)
		return wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness, "%v", err)
	}
	p.server = srv
	if p.client, err = e.open(ctx, p.conn); err != nil {
		e.unreserve(p)
		var verr *appserver.VersionError
		if errors.As(err, &verr) {
			return wire.Errorf(wire.CodeVersionBelowFloor, wire.ScopeHarness,
				"app-server %s of AgentHarness %s/%s: %v", srv.Name, h.Namespace, h.Name, verr)
		}
		return wire.Errorf(wire.CodeHarnessUnavailable, wire.ScopeHarness,
			"connect to app-server %s of AgentHarness %s/%s: %v", srv.Name, h.Namespace, h.Name, err)
	}
	return nil
}

// checkArtifact refuses a turn that expects a runtime artifact unless the
// chosen server is attested and runs exactly that artifact.
func checkArtifact(h *v1alpha1.AgentHarness, srv Server, exp *wire.ExpectedRuntimeArtifact, harnessID string) *wire.Error {
	if exp == nil {
		return nil
	}
	att := meta.FindStatusCondition(h.Status.Conditions, v1alpha1.HarnessConditionAttested)
	art := h.Status.RuntimeArtifact
	switch {
	case srv.Name == ExternalServerName || h.Spec.External != nil:
		return wire.Errorf(wire.CodeArtifactMismatch, wire.ScopeHarness,
			"Verified inference requires an attested runtime artifact, but agent harness %s is an external server, which is not attested.", harnessID)
	case att == nil || att.Status != metav1.ConditionTrue || art == nil:
		return wire.Errorf(wire.CodeArtifactMismatch, wire.ScopeHarness,
			"Verified inference requires an attested runtime artifact, but agent harness %s is not attested.", harnessID)
	case (exp.ID != "" && exp.ID != art.ID) || (exp.Fingerprint != "" && exp.Fingerprint != art.Fingerprint):
		return wire.Errorf(wire.CodeArtifactMismatch, wire.ScopeHarness,
			"Verified inference requires runtime artifact %s (%s), but server %s of agent harness %s runs %s (%s).",
			exp.ID, exp.Fingerprint, srv.Name, harnessID, art.ID, art.Fingerprint)
	}
	for _, s := range h.Status.Servers {
		if s.Name == srv.Name {
			return nil
		}
	}
	return wire.Errorf(wire.CodeArtifactMismatch, wire.ScopeHarness,
		"Verified inference requires an attested runtime artifact, but server %s of agent harness %s is not attested yet.", srv.Name, harnessID)
}

// serverConn is how the engine reaches one app-server of a harness: the
// pooled connection's key and the dial that (re)opens it.
type serverConn struct {
	poolKey string
	dial    func(context.Context) (*appserver.Client, error)
}

// serverConn returns how to reach srv with the harness's version floor.
// The harness's token Secret is read by the dial, not here: a turn on a
// pooled connection reads no Secret, and every dial (a reattach long after
// the turn started among them) reads the Secret as it is then, and checks
// again that the harness controls it (serverAuth).
func (e *Engine) serverConn(_ context.Context, h *v1alpha1.AgentHarness, srv Server) (serverConn, error) {
	minVersion, url := h.Spec.MinVersion, srv.URL
	log := e.log.WithValues("appServer", h.Namespace+"/"+h.Name+"/"+srv.Name)
	return serverConn{
		poolKey: h.Namespace + "/" + h.Name + "/" + srv.Name + "|" + srv.URL,
		dial: func(ctx context.Context) (*appserver.Client, error) {
			ctx, cancel := context.WithTimeout(ctx, dialTimeout)
			defer cancel()
			auth, err := e.serverAuth(ctx, h)
			if err != nil {
				return nil, err
			}
			t, err := appserver.DialWebSocket(ctx, url, auth)
			if err != nil {
				return nil, err
			}
			return appserver.Connect(ctx, t, appserver.Options{MinVersion: minVersion, Logger: log})
		},
	}, nil
}

// open returns the pooled connection of sc, dialing it when needed.
func (e *Engine) open(ctx context.Context, sc serverConn) (*appserver.Client, error) {
	return e.pool.get(ctx, sc.poolKey, sc.dial)
}

// workspaceRoot is the directory, on the server of c, that holds the
// sessions' working directories: Options.WorkspaceRoot, or <the server's
// native home>/workspaces.
func (e *Engine) workspaceRoot(c *appserver.Client) string {
	if e.opts.WorkspaceRoot != "" {
		return e.opts.WorkspaceRoot
	}
	home := c.ServerInfo().CodexHome
	if home == "" {
		home = "/tmp"
	}
	return path.Join(home, workspacesDir)
}

// servingServers are the app-servers of a harness that serve now: an
// external harness's one, a managed harness's ready pods that are not
// terminating.
func (e *Engine) servingServers(ctx context.Context, h *v1alpha1.AgentHarness) ([]Server, error) {
	if h.Spec.External != nil {
		return []Server{{Name: ExternalServerName, URL: h.Spec.External.URL}}, nil
	}
	pods, port, err := e.harnessPods(ctx, h)
	if err != nil {
		return nil, err
	}
	var out []Server
	for i := range pods {
		if podServes(&pods[i]) {
			out = append(out, podServer(&pods[i], port))
		}
	}
	return out, nil
}
