package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/harness-operator/internal/contract/sse"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

type turnOptions struct {
	kube       kubeFlags
	dispatcher dispatcherFlags
	prompt     string
	runID      string
	model      string
	routeFacts string
	native     nativeFlags
}

func newTurnCommand() *cobra.Command {
	var o turnOptions
	cmd := &cobra.Command{
		Use:   "turn <session> --prompt <text>",
		Short: "Run one turn on an AgentSession through the dispatcher and stream it",
		Long: `turn builds the turn from the AgentSession (agentId, sessionKey, sessionId and
provider/model from spec.model, or --model), sends it to the dispatcher and
streams it: assistant text as it arrives on standard output, tool calls and
their outcomes on their own lines, the selection and the outcome on standard
error (with a spinner while waiting when standard error is a terminal). The
CLI offers no host tools. If the stream breaks, turn reconnects once with
Last-Event-ID: the dispatcher resumes from its journal without running
anything again.

The dispatcher is --dispatcher, else $HARNESS_DISPATCHER_URL (its TLS
certificate checked against the system roots plus --dispatcher-ca or
$HARNESS_DISPATCHER_CA), else the dispatcher Service (--dispatcher-service, or
the one labelled app.kubernetes.io/component=dispatcher in
--dispatcher-namespace) through the API server's service proxy; a plain
http:// URL is refused. The kubeconfig's credential never reaches the
dispatcher: the CLI requests a 10-minute token of --service-account (default
harness-cli) in the session's namespace for --audience (as kubectl create
token does; it needs create on serviceaccounts/token for that ServiceAccount),
prints the identity on standard error and sends that token — through the proxy
in the X-Harness-Authorization header, because the API server drops
Authorization. The dispatcher records the ServiceAccount as the requester; the
API server's audit log records who requested the token.

Approvals and questions: with --approval-mode (untrusted, on-request) the
runtime asks before native actions; each approval_request is shown (kind,
command or changed paths, the grant of a permissions request in full, cwd,
reason) and answered by --approve: ask prompts on the terminal (y once, t
for this turn, n deny; the end of input denies),
always approves each request once, never denies. Without --approve the CLI asks
when standard input is a terminal and otherwise denies: a script never
approves an action nobody saw. A user_input_request (the runtime asks the user,
e.g. with --collaboration-mode plan) is asked on the terminal with ask: a
choice's number or, where the question takes one, free text; a secret answer
is read without echo and never printed. With always or never the CLI answers
it at once with no answers, so the turn goes on. Each request's resolution is
shown; an answer refused because the request was resolved first (409) or is
no longer pending (404) is reported and the turn goes on. Text from the model
or the runtime is never printed raw: control characters, escape sequences, bidi
overrides and invisible characters are shown as escapes (\x1b, \r, \u202e).

Route facts: for provider openai the turn carries OpenAI's official Platform
Responses route (api openai-responses, https://api.openai.com/v1, no request
overrides, codex compatible), the route an OpenClaw gateway prepares for a
default openai provider; other providers get none. With route facts the
harness that runs (a locked session's pin included) must support the route.
--route-facts none sends none: the attempt is pending and a locked, pinned
session stays on its harness unchecked.

Exit codes: 0 the turn completed (terminal ok), 3 a fail-closed decision, an
error event or a terminal other than ok (aborted, timeout, failed), 2 bad input
(an unknown session, a malformed flag), 1 other failures.`,
		Example: `  kubectl harness turn demo -n agents --prompt "What is 6 x 7?"`,
		Args:    oneSession,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTurn(cmd.Context(), o, args[0], cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	o.kube.add(f)
	o.dispatcher.add(f)
	f.StringVar(&o.prompt, "prompt", "", "The user's text (required).")
	f.StringVar(&o.runID, "run-id", "", "The turn's runId (default: a fresh one); repeating one resumes that run.")
	f.StringVar(&o.model, "model", "", "provider/model for this turn (default: the session's spec.model).")
	addRouteFactsFlag(f, &o.routeFacts)
	o.native.add(f)
	return cmd
}

// oneSession requires the session argument (exit 2 without it).
func oneSession(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return badInput(fmt.Errorf("want exactly one AgentSession name, got %d arguments", len(args)))
	}
	return nil
}

// splitModel splits provider/model.
func splitModel(m string) (string, string, bool) {
	p, id, ok := strings.Cut(m, "/")
	return p, id, ok && p != "" && id != ""
}

func newCLIRunID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "cli-" + hex.EncodeToString(b)
}

func runTurn(ctx context.Context, o turnOptions, name string, stdin io.Reader, stdout, stderr io.Writer) error {
	if strings.TrimSpace(o.prompt) == "" {
		return badInput(errors.New("--prompt is required"))
	}
	if _, err := routeFacts(o.routeFacts, ""); err != nil {
		return err
	}
	nativeOpts, err := o.native.options()
	if err != nil {
		return err
	}
	mode, err := o.native.answerMode(isTerminal(stdin))
	if err != nil {
		return err
	}
	kc, err := o.kube.client()
	if err != nil {
		return err
	}
	sess, err := kc.session(ctx, name)
	if err != nil {
		return err
	}
	model := o.model
	if model == "" {
		model = sess.Spec.Model
	}
	provider, modelID, ok := splitModel(model)
	if !ok {
		return badInput(fmt.Errorf("model %q: want provider/model", model))
	}
	route, err := routeFacts(o.routeFacts, provider)
	if err != nil {
		return err
	}
	req := wire.TurnRequest{
		Attempt: wire.Attempt{
			RunID: o.runID, AgentID: sess.Spec.AgentID, SessionKey: sess.Spec.SessionKey, SessionID: sess.Spec.SessionID,
			Provider: provider, ModelID: modelID, ModelProvider: route,
		},
		Prompt:              o.prompt,
		NativeActionOptions: nativeOpts,
	}
	if req.RunID == "" {
		req.RunID = newCLIRunID()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	dc, err := o.dispatcher.dispatcher(ctx, kc, stderr)
	if err != nil {
		return err
	}
	turns := dc.sessionURL(kc.namespace, name, wire.RouteTurns, "")
	p := &turnPrinter{out: stdout, errOut: stderr, spin: newSpinner(stderr), atLineStart: true,
		native: newAnswerer(mode, stdin, stdout, stderr, dc, kc.namespace, name)}
	defer p.spin.halt()
	return streamTurn(ctx, dc, turns, body, p, stderr)
}

// streamTurn posts the turn and hands its events to p; a stream that breaks
// before its `result` or `error` is resumed once with Last-Event-ID.
func streamTurn(ctx context.Context, dc *dispatcherClient, u string, body []byte, p *turnPrinter, stderr io.Writer) error {
	lastID := ""
	for attempt := 0; ; attempt++ {
		hdr := http.Header{}
		if lastID != "" {
			hdr.Set("Last-Event-ID", lastID)
		}
		p.spin.start()
		resp, err := dc.do(ctx, http.MethodPost, u, body, hdr)
		if err != nil {
			p.spin.halt()
			return err
		}
		if resp.StatusCode != http.StatusOK {
			p.spin.halt()
			err := responseError(resp, stderr)
			_ = resp.Body.Close()
			return err
		}
		var outcome error
		finished := false
		readErr := sse.Read(resp.Body, func(ev sse.Event) bool {
			if ev.ID != "" {
				lastID = ev.ID
			}
			done, err := p.event(ctx, ev)
			if done {
				finished, outcome = true, err
				return false
			}
			return true
		})
		_ = resp.Body.Close()
		if finished {
			p.spin.halt()
			return outcome
		}
		if attempt > 0 {
			p.spin.halt()
			p.lineBreak()
			if readErr == nil {
				readErr = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("the turn's stream broke again after a reconnect (last event id %q): %w", lastID, readErr)
		}
		p.spin.halt()
		// The notice goes to stderr only: the answer on stdout stays whole.
		_, _ = fmt.Fprintf(p.errOut, "stream interrupted (%v); reconnecting after event %q\n", orEOF(readErr), lastID)
	}
}

func orEOF(err error) error {
	if err == nil {
		return io.ErrUnexpectedEOF
	}
	return err
}

// turnPrinter renders a turn's events.
type turnPrinter struct {
	out, errOut io.Writer
	spin        *spinner
	atLineStart bool
	texts       bool // some assistant text was printed
	native      *answerer
}

func (p *turnPrinter) lineBreak() {
	if !p.atLineStart {
		_, _ = fmt.Fprintln(p.out)
		p.atLineStart = true
	}
}

// line prints one line of its own on standard output.
func (p *turnPrinter) line(format string, args ...any) {
	p.spin.halt()
	p.lineBreak()
	_, _ = fmt.Fprintf(p.out, format+"\n", args...)
	p.spin.start()
}

// event renders ev; done reports the terminal event, with the exit error.
func (p *turnPrinter) event(ctx context.Context, ev sse.Event) (bool, error) {
	switch ev.Type {
	case wire.EventSelected:
		var d wire.SelectedEvent
		if json.Unmarshal(ev.Data, &d) == nil {
			p.native.begin(d)
			p.spin.halt()
			_, _ = fmt.Fprintf(p.errOut, "run %s: runtime %s, harness %s (%s)\n", visible(d.RunID), visible(d.Runtime), visible(orDash(d.HarnessID)), visible(string(d.Reason)))
			p.spin.start()
		}
	case wire.EventPartial:
		var pt wire.Partial
		if json.Unmarshal(ev.Data, &pt) == nil && pt.Delta != "" {
			p.spin.halt()
			_, _ = io.WriteString(p.out, visibleText(pt.Delta))
			p.atLineStart = strings.HasSuffix(pt.Delta, "\n")
			p.texts = true
		}
	case wire.EventToolCall:
		var tc wire.ToolCall
		if json.Unmarshal(ev.Data, &tc) == nil {
			p.line("[tool call] %s %s (the CLI offers no host tools)", visible(tc.Tool), visible(compact(tc.Arguments)))
		}
	case wire.EventAgent:
		var ae wire.AgentEvent
		if json.Unmarshal(ev.Data, &ae) != nil {
			break
		}
		switch {
		case ae.Stream == wire.StreamTool && ae.Phase == wire.PhaseStart:
			p.line("[tool] %s started", visible(orDash(ae.Tool)))
		case ae.Stream == wire.StreamError || ae.Stream == wire.StreamWarning:
			p.line("[%s] %s", ae.Stream, visible(ae.Text))
		}
	case wire.EventToolTerminal:
		var tt wire.ToolTerminal
		if json.Unmarshal(ev.Data, &tt) != nil {
			break
		}
		tool := visible(tt.Tool)
		if tt.Outcome == wire.OutcomeSuccess {
			p.line("[tool] %s succeeded", tool)
		} else if tt.Failure != nil {
			p.line("[tool] %s failed (%s): %s", tool, visible(tt.Failure.Reason), visible(tt.Failure.Message))
		} else {
			p.line("[tool] %s %s", tool, visible(string(tt.Outcome)))
		}
	case wire.EventApprovalRequest:
		p.approvalRequest(ctx, ev.Data)
	case wire.EventUserInputRequest:
		p.userInputRequest(ctx, ev.Data)
	case wire.EventRequestResolved:
		p.requestResolved(ev.Data)
	case wire.EventResult:
		p.spin.halt()
		var res wire.ResultEvent
		if err := json.Unmarshal(ev.Data, &res); err != nil {
			return true, fmt.Errorf("decode the result event: %w", err)
		}
		if !p.texts {
			// Nothing was streamed (e.g. a text-less delta stream): the
			// result's texts are the answer.
			for _, t := range res.AssistantTexts {
				p.lineBreak()
				_, _ = io.WriteString(p.out, visibleText(t))
				p.atLineStart = strings.HasSuffix(t, "\n")
			}
		}
		p.lineBreak()
		if res.Terminal.Kind != wire.TerminalOK {
			msg := res.Terminal.Message
			if res.Terminal.ErrorInfo != "" {
				msg += " (" + res.Terminal.ErrorInfo + ")"
			}
			_, _ = fmt.Fprintf(p.errOut, "turn %s: %s\n", visible(string(res.Terminal.Kind)), visible(msg))
			return true, &exitError{code: exitFailClosed}
		}
		return true, nil
	case wire.EventError:
		p.spin.halt()
		p.lineBreak()
		ae := &wire.Error{}
		if json.Unmarshal(ev.Data, ae) != nil || ae.Code == "" {
			_, _ = fmt.Fprintf(p.errOut, "error: %s\n", visible(string(ev.Data)))
		} else {
			// A stream error says whether the turn may have had effects: a
			// gateway must not run it again unless replaySafe is true.
			replay := ""
			if ae.ReplaySafe != nil {
				replay = fmt.Sprintf(", replaySafe %t", *ae.ReplaySafe)
			}
			_, _ = fmt.Fprintf(p.errOut, "error: %s (retryable %t%s)\n", visible(ae.Error()), ae.Retryable, replay)
		}
		return true, &exitError{code: exitFailClosed}
	}
	return false, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func compact(b json.RawMessage) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// spinner animates a wait on a terminal; nil (not a terminal) does nothing.
type spinner struct {
	w    io.Writer
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

func newSpinner(w io.Writer) *spinner {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &spinner{w: w}
}

func (s *spinner) start() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop != nil {
		return
	}
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		frames := `|/-\`
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			_, _ = fmt.Fprintf(s.w, "\r%c waiting", frames[i%len(frames)])
			select {
			case <-stop:
				_, _ = io.WriteString(s.w, "\r\033[K")
				return
			case <-t.C:
			}
		}
	}(s.stop, s.done)
}

func (s *spinner) halt() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop, s.done = nil, nil
}

type transcriptOptions struct {
	kube       kubeFlags
	dispatcher dispatcherFlags
}

func newTranscriptCommand() *cobra.Command {
	var o transcriptOptions
	cmd := &cobra.Command{
		Use:   "transcript <session>",
		Short: "Print an AgentSession's transcript mirror (JSONL) from the dispatcher",
		Long: `transcript prints the session's transcript mirror as the dispatcher keeps it:
one JSON record a line (prompts, assistant answers, tool calls and results).
The dispatcher, its CA and the token are found as for turn.

Exit codes: 0 printed, 2 bad input (an unknown session), 1 other failures.`,
		Args: oneSession,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTranscript(cmd.Context(), o, args[0], cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.kube.add(cmd.Flags())
	o.dispatcher.add(cmd.Flags())
	return cmd
}

func runTranscript(ctx context.Context, o transcriptOptions, name string, stdout, stderr io.Writer) error {
	kc, err := o.kube.client()
	if err != nil {
		return err
	}
	dc, err := o.dispatcher.dispatcher(ctx, kc, stderr)
	if err != nil {
		return err
	}
	resp, err := dc.do(ctx, http.MethodGet, dc.sessionURL(kc.namespace, name, wire.RouteTranscript, ""), nil, nil)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return responseError(resp, stderr)
	}
	if _, err := io.Copy(stdout, resp.Body); err != nil {
		return fmt.Errorf("read the transcript: %w", err)
	}
	return nil
}
