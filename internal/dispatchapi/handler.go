package dispatchapi

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatch"
	"github.com/openclaw/harness-operator/internal/store"
	"github.com/openclaw/harness-operator/internal/turntoken"
	"github.com/openclaw/harness-operator/internal/wire"
)

// Defaults of Config.
const (
	// DefaultMaxBodyBytes bounds request bodies.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultRetryAfter is the Retry-After of 503 answers.
	DefaultRetryAfter = 1 * time.Second
	// TurnTokenHeader carries the turn token of tool-results, interrupt,
	// approvals and user-input.
	TurnTokenHeader = "X-Harness-Turn-Token"
	// RunIDHeader names the run of a turn stream.
	RunIDHeader = "X-Harness-Run-Id"
)

// Config configures a Handler.
type Config struct {
	// Engine runs the turns (required).
	Engine *dispatch.Engine
	// Store is the engine's store (required): streams, reconnects and
	// reads come from it.
	Store store.Store
	// Sessions reads AgentSessions (required; in the dispatcher the informer
	// cache), for the 404 of the reads.
	Sessions client.Reader
	// Authorizer checks each request's bearer token (required).
	Authorizer Authorizer
	// MaxBodyBytes bounds request bodies (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// AuthCacheTTL is how long a verdict is cached (DefaultAuthTTL); negative
	// disables the cache.
	AuthCacheTTL time.Duration
	// NegativeAuthCacheTTL is how long a token the API server rejected is
	// remembered as rejected (DefaultNegativeAuthTTL; at most AuthCacheTTL).
	NegativeAuthCacheTTL time.Duration
	// UnverifiedRate and UnverifiedBurst limit, per source address, the
	// requests whose token is not cached as valid (DefaultUnverifiedRate
	// per second, DefaultUnverifiedBurst); a negative rate disables the
	// limit.
	UnverifiedRate  float64
	UnverifiedBurst int
	// RetryAfter is the Retry-After of 503 answers (DefaultRetryAfter).
	RetryAfter time.Duration
	// TurnTokens signs and checks turn tokens: in the dispatcher the key
	// every replica loads from one Secret (turntoken.Load), so any replica
	// accepts any replica's tokens and a restart keeps them. Nil: a random
	// key of this Handler alone (tests and local runs; its tokens die with
	// the process).
	TurnTokens *turntoken.Key
	// Logger receives the handler's records; never a token.
	Logger logr.Logger
	// StreamWriteTimeout bounds each write of a turn stream or a transcript
	// to the client (DefaultStreamWriteTimeout): a client that stops reading
	// is cut off then, and the request's resources are freed.
	StreamWriteTimeout time.Duration
}

// Handler is the dispatcher's HTTP API (see the package documentation).
type Handler struct {
	eng        *dispatch.Engine
	store      store.Store
	sessions   client.Reader
	auth       Authorizer
	maxBody    int64
	retryAfter time.Duration
	tokens     *turntoken.Key
	cache      *authCache
	limiter    *sourceLimiter
	// reviews joins concurrent first reviews of one token (review).
	reviews   singleflight.Group
	log       logr.Logger
	mux       *http.ServeMux
	writeWait time.Duration // Config.StreamWriteTimeout
}

// NewHandler returns the API handler.
func NewHandler(cfg Config) (*Handler, error) {
	if cfg.Engine == nil || cfg.Store == nil || cfg.Sessions == nil || cfg.Authorizer == nil {
		return nil, errors.New("dispatchapi: Engine, Store, Sessions and Authorizer are required")
	}
	h := &Handler{
		eng: cfg.Engine, store: cfg.Store, sessions: cfg.Sessions, auth: cfg.Authorizer,
		maxBody: cfg.MaxBodyBytes, retryAfter: cfg.RetryAfter, tokens: cfg.TurnTokens, log: cfg.Logger,
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.retryAfter <= 0 {
		h.retryAfter = DefaultRetryAfter
	}
	h.writeWait = cfg.StreamWriteTimeout
	if h.writeWait <= 0 {
		h.writeWait = DefaultStreamWriteTimeout
	}
	ttl := cfg.AuthCacheTTL
	if ttl == 0 {
		ttl = DefaultAuthTTL
	}
	negTTL := cfg.NegativeAuthCacheTTL
	if negTTL == 0 {
		negTTL = DefaultNegativeAuthTTL
	}
	h.cache = newAuthCache(ttl, negTTL, time.Now)
	perSecond, burst := cfg.UnverifiedRate, cfg.UnverifiedBurst
	if perSecond == 0 {
		perSecond = DefaultUnverifiedRate
	}
	if burst <= 0 {
		burst = DefaultUnverifiedBurst
	}
	h.limiter = newSourceLimiter(perSecond, burst)
	if h.tokens == nil {
		var err error
		if h.tokens, err = processTurnTokens(); err != nil {
			return nil, err
		}
	}
	const base = "/v1/namespaces/{ns}/agentsessions/{name}"
	m := http.NewServeMux()
	m.HandleFunc("POST "+base+"/decide", h.decide)
	m.HandleFunc("POST "+base+"/turns", h.turn)
	m.HandleFunc("GET "+base+"/turns/{runId}", h.getTurn)
	m.HandleFunc("POST "+base+"/turns/{runId}/tool-results", h.toolResult)
	m.HandleFunc("POST "+base+"/turns/{runId}/interrupt", h.interrupt)
	m.HandleFunc("POST "+base+"/turns/{runId}/approvals", h.approval)
	m.HandleFunc("POST "+base+"/turns/{runId}/user-input", h.userInput)
	m.HandleFunc("POST "+base+"/turns/{runId}/finalize", h.finalize)
	m.HandleFunc("POST "+base+"/completions", h.completion)
	m.HandleFunc("GET "+base+"/transcript", h.transcript)
	m.HandleFunc("GET "+base+"/mcp-inventory", h.mcpInventory)
	m.HandleFunc("/", h.notFound)
	h.mux = m
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// notFound answers what no route took: 405 when another method has a route
// there, else 404.
func (h *Handler) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if m == r.Method {
			continue
		}
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, p := h.mux.Handler(r2); p != "" && p != "/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		h.writeError(w, wire.Errorf(wire.CodeMethodNotAllowed, "",
			"method %s is not allowed on %s; use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")), h.retryAfter)
		return
	}
	h.writeError(w, wire.Errorf(wire.CodeNotFound, "", "no such endpoint: %s %s", r.Method, r.URL.Path), h.retryAfter)
}

// --- turn tokens ---

// processTurnTokens is a random key of this process alone: the default
// without Config.TurnTokens.
func processTurnTokens() (*turntoken.Key, error) {
	key := make([]byte, turntoken.KeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("dispatchapi: turn token key: %w", err)
	}
	return turntoken.New(key)
}

// TurnToken is the turn token of a run (what the `selected` event carries):
// bound to the session's UID (session is dispatch.SessionKey), so it is
// worthless for a session created later under the same name.
func (h *Handler) TurnToken(session, runID string) string { return h.tokens.Sign(session, runID) }

func (h *Handler) checkTurnToken(w http.ResponseWriter, r *http.Request, session, runID string) bool {
	got := r.Header.Get(TurnTokenHeader)
	if !h.tokens.Verify(session, runID, got) {
		msg := "the " + TurnTokenHeader + " header is missing"
		if got != "" {
			msg = "the " + TurnTokenHeader + " header does not match this turn"
		}
		h.writeError(w, wire.Errorf(wire.CodeTurnTokenInvalid, "",
			"%s: present the turnToken of the turn's `selected` event", msg), h.retryAfter)
		return false
	}
	return true
}

// --- handlers ---

// session reads the request's AgentSession; a missing one is answered 404
// SessionNotFound.
func (h *Handler) session(w http.ResponseWriter, r *http.Request) (*v1alpha1.AgentSession, bool) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	s := &v1alpha1.AgentSession{}
	if err := h.sessions.Get(r.Context(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		if client.IgnoreNotFound(err) == nil {
			err = wire.Errorf(wire.CodeSessionNotFound, "", "AgentSession %s/%s not found", ns, name)
		}
		h.writeError(w, err, h.retryAfter)
		return nil, false
	}
	return s, true
}

// sessionKey is the journal key (dispatch.SessionKey) of the request's
// AgentSession: runs, tool calls and turn tokens belong to the object that
// exists now, never to a deleted one of the same name.
func (h *Handler) sessionKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	s, ok := h.session(w, r)
	if !ok {
		return "", false
	}
	return dispatch.SessionKey(s), true
}

func attrs(r *http.Request, verb string) Attributes {
	return Attributes{Verb: verb, Namespace: r.PathValue("ns"), Name: r.PathValue("name"), Subresource: SubresourceTurns}
}

func (h *Handler) decodeTurn(w http.ResponseWriter, r *http.Request) (*wire.TurnRequest, bool) {
	req, err := wire.DecodeTurnRequest(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return nil, false
	}
	return req, true
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := h.authorizeRun(w, r); !ok {
		return
	}
	req, ok := h.decodeTurn(w, r)
	if !ok {
		return
	}
	d, err := h.eng.Decide(r.Context(), r.PathValue("ns"), r.PathValue("name"), req)
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	d.Error = h.redacted(d.Error)
	writeJSON(w, http.StatusOK, d)
}

// turn runs (or resumes) a turn and streams its journaled events.
func (h *Handler) turn(w http.ResponseWriter, r *http.Request) {
	caller, delegate, ok := h.authorizeRun(w, r)
	if !ok {
		return
	}
	req, ok := h.decodeTurn(w, r)
	if !ok {
		return
	}
	afterSeq, reconnect, ok := h.lastEventID(w, r, req)
	if !ok {
		return
	}
	var run store.Run
	var err error
	if reconnect {
		// A reconnect never runs a turn: the run must be journaled.
		session, ok := h.sessionKey(w, r)
		if !ok {
			return
		}
		run, err = h.reconnect(r, session, req)
		if err == nil && delegate {
			err = dispatch.DelegateMayFollow(run, caller.requester())
		}
	} else if delegate {
		run, err = h.eng.StartDelegated(r.Context(), r.PathValue("ns"), r.PathValue("name"), req, caller.requester())
	} else {
		// Start returns once the run is journaled (or refused); the turn
		// runs on the engine's context, not this request's: the client may
		// leave and reconnect. While it waits for the session it is
		// dropped with this request: nothing ran, its runId stays free.
		run, err = h.eng.Start(r.Context(), r.PathValue("ns"), r.PathValue("name"), req, caller.requester())
	}
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	h.stream(w, r, run, afterSeq)
}

// lastEventID reads a reconnect's Last-Event-ID; a reconnect must name the
// turn's runId.
func (h *Handler) lastEventID(w http.ResponseWriter, r *http.Request, req *wire.TurnRequest) (afterSeq int64, reconnect, ok bool) {
	v := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if v == "" {
		return 0, false, true
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		h.writeError(w, wire.Errorf(wire.CodeBadRequest, "", "Last-Event-ID must be an event id of this API (a non-negative integer)"), h.retryAfter)
		return 0, false, false
	}
	if req.RunID == "" {
		h.writeError(w, wire.Errorf(wire.CodeBadRequest, "", "a reconnect with Last-Event-ID must repeat the turn's runId in the body"), h.retryAfter)
		return 0, false, false
	}
	return n, true, true
}

// reconnect is the journaled run a reconnect follows again.
func (h *Handler) reconnect(r *http.Request, session string, req *wire.TurnRequest) (store.Run, error) {
	digest, err := req.Digest()
	if err != nil {
		return nil, err
	}
	run, err := h.ownRun(session, req.RunID, digest)
	if errors.Is(err, store.ErrNotFound) {
		return nil, wire.Errorf(wire.CodeRunNotFound, "",
			"run %q of AgentSession %s/%s is not in the journal; a reconnect does not run a turn again", req.RunID, r.PathValue("ns"), r.PathValue("name"))
	}
	return run, err
}

// ownRun is the journaled run runID of session if it was begun for a request
// with this digest; store.ErrNotFound when there is none; a RunIdConflict
// when another body owns runID (its stream and turn token belong to that
// other request).
func (h *Handler) ownRun(session, runID string, digest [32]byte) (store.Run, error) {
	run, err := h.store.FindRun(session, runID)
	if err != nil {
		return nil, err
	}
	if run.Info().Digest != digest {
		return nil, wire.RunIDConflict(session, runID)
	}
	return run, nil
}

// DefaultStreamWriteTimeout is the default of Config.StreamWriteTimeout.
const DefaultStreamWriteTimeout = 30 * time.Second

// stream writes a run's journaled events after afterSeq as
// text/event-stream, following a running run to its end. Each write to the
// client must complete within h.writeWait: a client that stops reading is cut
// off, and the handler ends (the turn goes on; a reconnect resumes it).
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, run store.Run, afterSeq int64) {
	info := run.Info()
	runID := info.RunID
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Set(RunIDHeader, runID)
	out := h.deadlineWriter(w)
	w.WriteHeader(http.StatusOK)
	if err := out.flush(); err != nil {
		return
	}
	token := h.TurnToken(info.Session, runID)
	var buf bytes.Buffer
	for ev, err := range run.Events(r.Context(), afterSeq) {
		if err != nil {
			if r.Context().Err() == nil && !errors.Is(err, store.ErrClosed) {
				// The run can no longer be read (retention pruned it,
				// its file is damaged): say so rather than just stop.
				// No id: it is not a journaled event.
				b, _ := json.Marshal(h.redacted(toAPIError(err)))
				buf.Reset()
				writeEvent(&buf, "", wire.EventError, b)
				_ = out.writeFlush(buf.Bytes())
			}
			return // otherwise the client left, or the store closed
		}
		payload := ev.Payload
		if ev.Type == wire.EventSelected {
			payload = withTurnFields(payload, runID, token)
		}
		buf.Reset()
		writeEvent(&buf, strconv.FormatInt(ev.Seq, 10), ev.Type, payload)
		if err := out.writeFlush(buf.Bytes()); err != nil {
			h.log.V(1).Info("turn stream ended: a write to the client failed", "run", runID, "event", ev.Seq, "error", err.Error())
			return
		}
	}
	if info := run.Info(); info.State == store.StateFailed && len(info.Result) == 0 {
		// A run found running after a restart: its outcome is unknown. No
		// id: it is not a journaled event.
		b, _ := json.Marshal(wire.OutcomeUnknown(info.Reason))
		buf.Reset()
		writeEvent(&buf, "", wire.EventError, b)
		_ = out.writeFlush(buf.Bytes())
	}
}

func writeEvent(b *bytes.Buffer, id, typ string, payload json.RawMessage) {
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	b.WriteString("event: " + typ + "\n")
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	// Journal payloads are compact JSON: one line.
	b.WriteString("data: ")
	b.Write(payload)
	b.WriteString("\n\n")
}

// withTurnFields adds runId and turnToken to the `selected` decision
// (wire.SelectedEvent). It merges into the journaled JSON rather than
// re-encoding a struct, so the payload's bytes stay what they always were
// (its keys in sorted order).
func withTurnFields(payload json.RawMessage, runID, token string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	m["runId"], _ = json.Marshal(runID)
	m["turnToken"], _ = json.Marshal(token)
	out, err := json.Marshal(m)
	if err != nil {
		return payload
	}
	return out
}

// TurnState is the answer of GET …/turns/{runId}.
type TurnState struct {
	RunID      string     `json:"runId"`
	Session    string     `json:"session"`
	State      string     `json:"state"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	// LastEventID is the id of the run's last event.
	LastEventID int64 `json:"lastEventId"`
	// Result is the `result` payload of a finished run.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the `error` payload of a failed run.
	Error json.RawMessage `json:"error,omitempty"`
	// Requester is who started the run (the authenticated caller of its
	// first request); omitted for runs journaled without one.
	Requester *store.Requester `json:"requester,omitempty"`
}

func (h *Handler) lookupRun(w http.ResponseWriter, r *http.Request) (store.Run, bool) {
	ns, name, runID := r.PathValue("ns"), r.PathValue("name"), r.PathValue("runId")
	session, ok := h.sessionKey(w, r)
	if !ok {
		return nil, false
	}
	run, err := h.store.FindRun(session, runID)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			err = wire.Errorf(wire.CodeRunNotFound, "", "run %q of AgentSession %s/%s is not in the journal", runID, ns, name)
		}
		h.writeError(w, err, h.retryAfter)
		return nil, false
	}
	return run, true
}

func (h *Handler) getTurn(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorize(w, r, attrs(r, VerbGet)); !ok {
		return
	}
	run, ok := h.lookupRun(w, r)
	if !ok {
		return
	}
	info := run.Info()
	st := TurnState{RunID: info.RunID, Session: info.Session, State: string(info.State), StartedAt: info.StartedAt, LastEventID: info.LastSeq}
	if by := info.Requester; by.User != "" || by.UID != "" {
		st.Requester = &by
	}
	if !info.FinishedAt.IsZero() {
		t := info.FinishedAt
		st.FinishedAt = &t
	}
	switch info.State {
	case store.StateFinished:
		st.Result = info.Result
	case store.StateFailed:
		st.Error = info.Result
		if len(st.Error) == 0 {
			st.Error, _ = json.Marshal(wire.OutcomeUnknown(info.Reason))
		}
	}
	writeJSON(w, http.StatusOK, st)
}

func (h *Handler) toolResult(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := h.authorizeRun(w, r); !ok {
		return
	}
	runID := r.PathValue("runId")
	session, ok := h.sessionKey(w, r)
	if !ok || !h.checkTurnToken(w, r, session, runID) {
		return
	}
	var body wire.ToolResultRequest
	if err := wire.DecodeStrict(http.MaxBytesReader(w, r.Body, h.maxBody), &body); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	if body.CallID == "" {
		h.writeError(w, &wire.FieldError{Field: "callId", Message: "must not be empty"}, h.retryAfter)
		return
	}
	if err := body.Validate(); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	if _, ok := h.lookupRun(w, r); !ok {
		return
	}
	if err := h.eng.SubmitToolResult(session, runID, body.CallID, body.ToolAnswer); err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "callId": body.CallID, "accepted": true})
}

func (h *Handler) interrupt(w http.ResponseWriter, r *http.Request) {
	if _, _, ok := h.authorizeRun(w, r); !ok {
		return
	}
	ns, name, runID := r.PathValue("ns"), r.PathValue("name"), r.PathValue("runId")
	session, ok := h.sessionKey(w, r)
	if !ok || !h.checkTurnToken(w, r, session, runID) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		h.writeError(w, err, h.retryAfter)
		return
	}
	if len(bytes.TrimSpace(body)) > 0 {
		var empty struct{}
		if err := wire.DecodeStrict(bytes.NewReader(body), &empty); err != nil {
			h.writeError(w, err, h.retryAfter)
			return
		}
	}
	run, ok := h.lookupRun(w, r)
	if !ok {
		return
	}
	if run.Info().State != store.StateRunning || !h.eng.Interrupt(session, runID) {
		h.writeError(w, wire.Errorf(wire.CodeTurnNotRunning, "",
			"run %q of AgentSession %s/%s is not running", runID, ns, name), h.retryAfter)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"runId": runID, "interrupted": true})
}

// transcript streams the session's transcript from the store to the client,
// in chunks, each write bounded by h.writeWait. The status and headers go
// out with the first bytes: an error before them is answered as JSON; one
// after them can only end the response, which is then cut without its
// proper end (the client sees an unexpected EOF, never a shorter transcript
// that looks complete).
func (h *Handler) transcript(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.authorize(w, r, attrs(r, VerbGet)); !ok {
		return
	}
	s, ok := h.session(w, r)
	if !ok {
		return
	}
	body := &lazyBody{w: w, out: h.deadlineWriter(w)}
	_, err := h.store.ReadTranscript(dispatch.SessionKey(s), body)
	switch {
	case err != nil && !body.started:
		h.writeError(w, err, h.retryAfter)
	case err != nil:
		h.log.V(1).Info("transcript cut short", "session", dispatch.SessionKey(s), "error", err.Error())
		panic(http.ErrAbortHandler)
	case !body.started: // an empty transcript
		body.start()
	}
}
