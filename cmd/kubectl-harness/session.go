package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// Session names derived from session ids.
const (
	// maxSessionNameLen keeps the name a DNS label (63).
	maxSessionNameLen = 63
	// nameHashLen is the length of the hash suffix of a shortened name.
	nameHashLen = 8
)

// sessionName derives an AgentSession name from an OpenClaw session id: the
// id lowercased, every character other than a-z, 0-9 and '-' replaced by '-',
// leading and trailing '-' removed. A result longer than 63 characters (a DNS
// label) is cut to 54 and gets '-' plus the first 8 hex digits of the
// SHA-256 of the whole id, so long ids sharing a prefix stay apart. Ids that
// differ only in case or in replaced characters map to the same name; the
// second create then fails with AlreadyExists.
func sessionName(sessionID string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(sessionID) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-")
	if name != "" && len(name) <= maxSessionNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(sessionID))
	suffix := hex.EncodeToString(sum[:])[:nameHashLen]
	if name == "" {
		return "session-" + suffix
	}
	return strings.TrimRight(name[:maxSessionNameLen-1-nameHashLen], "-") + "-" + suffix
}

// newSessionID is a random UUID (version 4), the shape of OpenClaw's ids.
func newSessionID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func newSessionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "session",
		Short: "Manage AgentSessions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return badInput(errors.New("a subcommand is required: kubectl harness session create"))
		},
	}
	cmd.AddCommand(newSessionCreateCommand())
	return cmd
}

type sessionCreateOptions struct {
	kube      kubeFlags
	model     string
	key       string
	agent     string
	sessionID string
}

func newSessionCreateCommand() *cobra.Command {
	var o sessionCreateOptions
	cmd := &cobra.Command{
		Use:   "create --model <provider/model> --key <sessionKey>",
		Short: "Create an AgentSession and print its name",
		Long: `create makes an AgentSession (agentId, sessionKey, sessionId, model) in the
namespace and prints its name on standard output.

The name is derived from the session id: lowercased, every character other
than a-z, 0-9 and '-' replaced by '-', leading and trailing '-' removed; a
name longer than 63 characters is cut and ends in '-' plus 8 hex digits of
the SHA-256 of the id. Without --session-id a random UUID is used.

Exit codes: 0 created, 2 bad input (refused by the API server, or a session of
that name exists), 1 other failures.`,
		Example: `  kubectl harness session create -n agents --model openai/gpt-5.5 --key agent:main:main`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSessionCreate(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	o.kube.add(f)
	f.StringVar(&o.model, "model", "", "The session's model as provider/model (required).")
	f.StringVar(&o.key, "key", "", "OpenClaw's session key (required).")
	f.StringVar(&o.agent, "agent", "main", "OpenClaw's agent id.")
	f.StringVar(&o.sessionID, "session-id", "", "OpenClaw's session id (default: a random UUID); the name is derived from it.")
	return cmd
}

func runSessionCreate(ctx context.Context, o sessionCreateOptions, stdout io.Writer) error {
	if o.model == "" || o.key == "" {
		return badInput(errors.New("--model and --key are required"))
	}
	if _, _, ok := splitModel(o.model); !ok {
		return badInput(fmt.Errorf("--model %q: want provider/model", o.model))
	}
	id := o.sessionID
	if id == "" {
		id = newSessionID()
	}
	kc, err := o.kube.client()
	if err != nil {
		return err
	}
	s := &v1alpha1.AgentSession{
		ObjectMeta: metav1.ObjectMeta{Namespace: kc.namespace, Name: sessionName(id)},
		Spec:       v1alpha1.AgentSessionSpec{AgentID: o.agent, SessionKey: o.key, SessionID: id, Model: o.model},
	}
	if err := kc.c.Create(ctx, s); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsAlreadyExists(err) || apierrors.IsBadRequest(err) {
			return badInput(fmt.Errorf("create AgentSession %s/%s: %w", s.Namespace, s.Name, err))
		}
		return fmt.Errorf("create AgentSession %s/%s: %w", s.Namespace, s.Name, err)
	}
	_, err = fmt.Fprintln(stdout, s.Name)
	return err
}

// statusView is what `status` prints: the session's identity and the
// status written by the manager (policy) and the dispatcher (the rest).
type statusView struct {
	Name            string                    `json:"name"`
	Namespace       string                    `json:"namespace"`
	AgentID         string                    `json:"agentId"`
	SessionKey      string                    `json:"sessionKey"`
	SessionID       string                    `json:"sessionId"`
	Model           string                    `json:"model"`
	RuntimeOverride v1alpha1.RuntimeID        `json:"runtimeOverride,omitempty"`
	ResetGeneration int64                     `json:"resetGeneration"`
	Policy          *v1alpha1.SessionPolicy   `json:"policy,omitempty"`
	AgentHarnessID  string                    `json:"agentHarnessId,omitempty"`
	LastSelection   *v1alpha1.LastSelection   `json:"lastSelection,omitempty"`
	NativeBinding   *v1alpha1.NativeBinding   `json:"nativeBinding,omitempty"`
	ActiveTurn      *v1alpha1.ActiveTurn      `json:"activeTurn,omitempty"`
	LastTurn        *v1alpha1.LastTurn        `json:"lastTurn,omitempty"`
	Counters        *v1alpha1.SessionCounters `json:"counters,omitempty"`
	Conditions      []metav1.Condition        `json:"conditions,omitempty"`
}

func newStatusView(s *v1alpha1.AgentSession) statusView {
	st := s.Status
	return statusView{
		Name: s.Name, Namespace: s.Namespace, AgentID: s.Spec.AgentID, SessionKey: s.Spec.SessionKey,
		SessionID: s.Spec.SessionID, Model: s.Spec.Model, RuntimeOverride: s.Spec.RuntimeOverride,
		ResetGeneration: s.Spec.ResetGeneration, Policy: st.Policy, AgentHarnessID: st.AgentHarnessID,
		LastSelection: st.LastSelection, NativeBinding: st.NativeBinding, ActiveTurn: st.ActiveTurn,
		LastTurn: st.LastTurn, Counters: st.Counters, Conditions: st.Conditions,
	}
}

type statusOptions struct {
	kube   kubeFlags
	output string
}

func newStatusCommand() *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use:   "status <session>",
		Short: "Show an AgentSession's status: policy, pin, last selection, thread, last turn",
		Long: `status reads the AgentSession through the kubeconfig and prints its status
view: the runtime policy asks for and where it came from, the harness pin,
the last selection with its reason and candidates, the native thread and its
pod, the active and last turn, and the counters.

Exit codes: 0 printed, 2 bad input (an unknown session or output format), 1
other failures.`,
		Example: `  kubectl harness status demo -n agents -o yaml`,
		Args:    oneSession,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	o.kube.add(cmd.Flags())
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "Output format: text, json or yaml.")
	return cmd
}

func runStatus(ctx context.Context, o statusOptions, name string, stdout io.Writer) error {
	switch o.output {
	case "text", "json", "yaml":
	default:
		return badInput(fmt.Errorf("--output %q: want text, json or yaml", o.output))
	}
	kc, err := o.kube.client()
	if err != nil {
		return err
	}
	s, err := kc.session(ctx, name)
	if err != nil {
		return err
	}
	v := newStatusView(s)
	switch o.output {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	return writeStatusText(stdout, v)
}

func writeStatusText(w io.Writer, v statusView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { _, _ = fmt.Fprintf(tw, k+":\t"+format+"\n", args...) }
	row("Session", "%s/%s", v.Namespace, v.Name)
	row("Agent", "%s", v.AgentID)
	row("Session key", "%s", v.SessionKey)
	row("Session id", "%s", v.SessionID)
	row("Model", "%s", v.Model)
	if v.RuntimeOverride != "" {
		row("Runtime override", "%s", v.RuntimeOverride)
	}
	if p := v.Policy; p != nil {
		row("Policy runtime", "%s (source %s)", p.Runtime, p.Source)
		if len(p.MatchedPolicies) > 0 {
			row("Matched policies", "%s", strings.Join(p.MatchedPolicies, ", "))
		}
	} else {
		row("Policy runtime", "<not reported yet>")
	}
	row("Pinned harness", "%s", orNone(v.AgentHarnessID))
	if ls := v.LastSelection; ls != nil {
		row("Last selection", "runtime %s, reason %s, runtime source %s, run %s", ls.Runtime, ls.Reason, ls.RuntimeSource, orNone(ls.RunID))
		for _, c := range ls.Candidates {
			line := fmt.Sprintf("%s %s (priority %d)", c.HarnessID, c.Result, c.Priority)
			if c.Reason != "" {
				line += ": " + c.Reason
			}
			row("  Candidate", "%s", line)
		}
	} else {
		row("Last selection", "<none>")
	}
	if nb := v.NativeBinding; nb != nil {
		row("Thread", "%s on pod %s (generation %d of %d)", nb.ThreadID, nb.Pod, nb.Generation, v.ResetGeneration)
	} else {
		row("Thread", "<none>")
	}
	if at := v.ActiveTurn; at != nil {
		row("Active turn", "%s since %s (deadline %s)", at.RunID, at.StartedAt.UTC().Format("2006-01-02T15:04:05Z"), at.Deadline.UTC().Format("2006-01-02T15:04:05Z"))
	}
	if lt := v.LastTurn; lt != nil {
		line := fmt.Sprintf("%s %s", lt.RunID, lt.Outcome)
		if lt.Classification != "" {
			line += ", " + string(lt.Classification)
		}
		if lt.ErrorCode != "" {
			line += ", error " + lt.ErrorCode
		}
		line += fmt.Sprintf(" (%s, %s)", lt.FinishedAt.UTC().Format("2006-01-02T15:04:05Z"), lt.FinishedAt.Sub(lt.StartedAt.Time))
		row("Last turn", "%s", line)
	} else {
		row("Last turn", "<none>")
	}
	if c := v.Counters; c != nil {
		row("Counters", "%d turns, %d failed; tokens %d in (%d cached), %d out", c.Turns, c.FailedTurns, c.InputTokens, c.CachedInputTokens, c.OutputTokens)
	}
	for _, c := range v.Conditions {
		line := fmt.Sprintf("%s=%s %s", c.Type, c.Status, c.Reason)
		if c.Message != "" {
			line += ": " + c.Message
		}
		row("Condition", "%s", line)
	}
	return tw.Flush()
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
