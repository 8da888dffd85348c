package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// How the CLI answers a turn's approval requests (--approve).
const (
	approveAsk    = "ask"
	approveAlways = "always"
	approveNever  = "never"
)

// nativeFlags are turn's flags for native actions: the turn fields that ask
// the runtime to request approvals and user input, and how the CLI answers.
type nativeFlags struct {
	approvalMode      string
	collaborationMode string
	approve           string
}

func (n *nativeFlags) add(f *pflag.FlagSet) {
	f.StringVar(&n.approvalMode, "approval-mode", "", "How the runtime asks before native actions (commands, file changes): never, untrusted or on-request "+
		"(default: not sent; the dispatcher then runs them without asking).")
	f.StringVar(&n.collaborationMode, "collaboration-mode", "", "The runtime's collaboration mode for the turn: default or plan "+
		"(plan: it proposes a plan and may ask questions; default: not sent).")
	f.StringVar(&n.approve, "approve", "", "How the CLI answers approval requests: ask (on the terminal), always (approve each once) or never (deny) "+
		"(default: ask when standard input is a terminal, else never: a script denies, it never approves unseen).")
}

// options validates the turn fields, naming the flag of a bad value.
func (n *nativeFlags) options() (wire.NativeActionOptions, error) {
	var o wire.NativeActionOptions
	switch m := wire.ApprovalMode(n.approvalMode); m {
	case "", wire.ApprovalModeNever, wire.ApprovalModeUntrusted, wire.ApprovalModeOnRequest:
		o.ApprovalMode = m
	default:
		return o, badInput(fmt.Errorf("--approval-mode %q: want never, untrusted or on-request", n.approvalMode))
	}
	switch m := wire.CollaborationMode(n.collaborationMode); m {
	case "", wire.CollaborationDefault, wire.CollaborationPlan:
		o.CollaborationMode = m
	default:
		return o, badInput(fmt.Errorf("--collaboration-mode %q: want default or plan", n.collaborationMode))
	}
	return o, nil
}

// answerMode is --approve, defaulted from whether standard input is a
// terminal: without one nobody can be asked, and approving unseen actions
// would not fail closed.
func (n *nativeFlags) answerMode(stdinTerminal bool) (string, error) {
	switch n.approve {
	case "":
		if stdinTerminal {
			return approveAsk, nil
		}
		return approveNever, nil
	case approveAsk, approveAlways, approveNever:
		return n.approve, nil
	}
	return "", badInput(fmt.Errorf("--approve %q: want ask, always or never", n.approve))
}

// isTerminal says whether r is a terminal.
func isTerminal(r any) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// answerer answers a turn's approval and user-input requests: it asks on
// the terminal (mode ask) or answers by --approve, and posts the answer with
// the turn token. It never fails the turn: an answer that is refused or
// cannot be sent is reported, and the dispatcher resolves the request at its
// deadline.
type answerer struct {
	mode   string
	in     *bufio.Reader
	prompt io.Writer
	// readSecret reads a secret answer without echo; nil reads a line from
	// in (standard input is no terminal, nothing echoes it).
	readSecret func() (string, error)
	// factsInPrompt repeats a request's facts in the prompt, for when the
	// stream's own line about it (standard output) is not on the terminal.
	factsInPrompt bool

	dc                 *dispatcherClient
	namespace, session string // the AgentSession whose turn this is
	runID              string
	token              string
	// requests maps request ids to what they are ("approval", "user
	// input") and whether they are settled; a reconnect may deliver a
	// pending request again, and a settled one is not asked twice.
	requests map[string]*requestState
}

type requestState struct {
	what    string
	settled bool
}

// newAnswerer answers the requests of a turn of the AgentSession namespace/session.
func newAnswerer(mode string, stdin io.Reader, stdout, stderr io.Writer, dc *dispatcherClient, namespace, session string) *answerer {
	a := &answerer{
		mode: mode, in: bufio.NewReader(stdin), prompt: stderr, factsInPrompt: !isTerminal(stdout),
		dc: dc, namespace: namespace, session: session, requests: map[string]*requestState{},
	}
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		a.readSecret = func() (string, error) {
			b, err := term.ReadPassword(int(f.Fd()))
			_, _ = fmt.Fprintln(a.prompt)
			return string(b), err
		}
	}
	return a
}

// begin records the run and its turn token from the selected event.
func (a *answerer) begin(d wire.SelectedEvent) {
	a.runID, a.token = d.RunID, d.TurnToken
}

// seen records a request; false when it is settled already (delivered
// again after a reconnect).
func (a *answerer) seen(id, what string) bool {
	st, ok := a.requests[id]
	if !ok {
		a.requests[id] = &requestState{what: what}
		return true
	}
	return !st.settled
}

func (a *answerer) settle(id string) {
	if st, ok := a.requests[id]; ok {
		st.settled = true
	} else {
		a.requests[id] = &requestState{what: "request", settled: true}
	}
}

// what names a request for its resolution line.
func (a *answerer) what(id string) string {
	if st, ok := a.requests[id]; ok {
		return st.what
	}
	return "request"
}

// readLine reads one answer line; io.EOF when the input ended.
func (a *answerer) readLine() (string, error) {
	s, err := a.in.ReadString('\n')
	if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// approval decides an approval request: by --approve, or by asking.
func (a *answerer) approval(req wire.ApprovalRequest) wire.ApprovalDecision {
	id := visible(req.RequestID)
	if req.Kind == wire.ApprovalPermissions && len(req.Permissions) == 0 {
		// Approving grants what the runtime asked for; unseen, that could
		// be anything.
		_, _ = fmt.Fprintf(a.prompt, "denying %s: the permissions request does not show what it grants\n", id)
		return wire.Deny
	}
	switch a.mode {
	case approveAlways:
		_, _ = fmt.Fprintf(a.prompt, "approving %s once (--approve=always)\n", id)
		return wire.ApproveOnce
	case approveNever:
		_, _ = fmt.Fprintf(a.prompt, "denying %s (--approve=never)\n", id)
		return wire.Deny
	}
	offered := req.Decisions
	if len(offered) == 0 {
		offered = []wire.ApprovalDecision{wire.ApproveOnce, wire.ApproveForTurn, wire.Deny}
	}
	for {
		if a.factsInPrompt {
			_, _ = fmt.Fprintf(a.prompt, "%s\n", describeApproval(req))
		}
		_, _ = fmt.Fprintf(a.prompt, "approve? %s: ", decisionChoices(offered))
		line, err := a.readLine()
		if err != nil {
			_, _ = fmt.Fprintln(a.prompt, "\nno answer (end of input): denied")
			return wire.Deny
		}
		if d, ok := parseDecision(line, offered); ok {
			return d
		}
		_, _ = fmt.Fprintf(a.prompt, "%q is not an answer; type one of %s\n", line, decisionChoices(offered))
	}
}

// decisionKeys are the keys that answer an approval prompt.
var decisionKeys = []struct {
	key, word string
	decision  wire.ApprovalDecision
	label     string
}{
	{"y", "yes", wire.ApproveOnce, "y = once"},
	{"t", "turn", wire.ApproveForTurn, "t = for this turn"},
	{"n", "no", wire.Deny, "n = deny"},
}

func decisionChoices(offered []wire.ApprovalDecision) string {
	var s []string
	for _, k := range decisionKeys {
		if slices.Contains(offered, k.decision) {
			s = append(s, k.label)
		}
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// parseDecision reads a prompt answer: y/yes, t/turn, n/no (any case), only
// among the decisions the request offers.
func parseDecision(line string, offered []wire.ApprovalDecision) (wire.ApprovalDecision, bool) {
	in := strings.ToLower(strings.TrimSpace(line))
	for _, k := range decisionKeys {
		if (in == k.key || in == k.word) && slices.Contains(offered, k.decision) {
			return k.decision, true
		}
	}
	return "", false
}

// describeApproval is the one-line description of an approval request,
// every field of it escaped (visible). A grant is shown in full: the reason
// is the model's and need not say what approving gives.
func describeApproval(req wire.ApprovalRequest) string {
	var b strings.Builder
	b.WriteString(strings.ReplaceAll(visible(string(req.Kind)), "_", " "))
	if req.Command != "" {
		fmt.Fprintf(&b, " `%s`", visible(req.Command))
	}
	if len(req.ChangedPaths) > 0 {
		paths := make([]string, len(req.ChangedPaths))
		for i, p := range req.ChangedPaths {
			paths[i] = visible(p)
		}
		b.WriteString(" " + strings.Join(paths, ", "))
	}
	if len(req.Permissions) > 0 {
		b.WriteString(" granting " + visible(compactJSON(req.Permissions)))
	}
	if req.Cwd != "" {
		b.WriteString(" in " + visible(req.Cwd))
	}
	if req.Reason != "" {
		b.WriteString(": " + visible(req.Reason))
	}
	return b.String()
}

// compactJSON is raw without insignificant whitespace; raw as it is when it
// is not JSON.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// post sends an answer (route wire.RouteApprovals or wire.RouteUserInput) with the turn
// token. A refusal is told on the prompt's writer, not returned: the turn
// goes on whatever happened to the answer.
func (a *answerer) post(ctx context.Context, route, requestID string, body any) {
	b, err := json.Marshal(body)
	if err == nil && a.token == "" {
		err = errors.New("no turn token (the stream had no selected event)")
	}
	id := visible(requestID)
	if err != nil {
		_, _ = fmt.Fprintf(a.prompt, "could not answer %s: %v\n", id, err)
		return
	}
	hdr := http.Header{}
	hdr.Set(wire.TurnTokenHeader, a.token)
	resp, err := a.dc.do(ctx, http.MethodPost, a.dc.sessionURL(a.namespace, a.session, route, a.runID), b, hdr)
	if err != nil {
		_, _ = fmt.Fprintf(a.prompt, "could not answer %s: %v\n", id, err)
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusAccepted {
		a.settle(requestID)
		return
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ae := &wire.Error{}
	if json.Unmarshal(msg, ae) != nil || ae.Code == "" {
		_, _ = fmt.Fprintf(a.prompt, "could not answer %s: dispatcher answered %s: %s\n", id, visible(resp.Status), visible(strings.TrimSpace(string(msg))))
		return
	}
	switch ae.Code {
	case wire.CodeRequestAlreadyResolved:
		// Another client (or the deadline) answered first; that answer
		// stands and the stream reports it.
		a.settle(requestID)
		_, _ = fmt.Fprintf(a.prompt, "%s was already resolved; the first answer stands (%s)\n", id, visible(ae.Message))
	case wire.CodeNoPendingRequest:
		a.settle(requestID)
		_, _ = fmt.Fprintf(a.prompt, "%s is no longer pending (%s)\n", id, visible(ae.Message))
	default:
		_, _ = fmt.Fprintf(a.prompt, "could not answer %s: %s (HTTP %d)\n", id, visible(ae.Error()), resp.StatusCode)
	}
}
