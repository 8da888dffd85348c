package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/policy/selection"
)

type explainOptions struct {
	files      []string
	attempt    string
	output     string
	offline    bool
	namespace  string
	kubeconfig string
	context    string
}

func newExplainCommand() *cobra.Command {
	var o explainOptions
	cmd := &cobra.Command{
		Use:   "explain --attempt <file|-> [--offline -f <file|dir> ...]",
		Short: "Show which runtime a prepared attempt would run on, and why",
		Long: `explain decides a prepared attempt exactly as the dispatcher would, without
running anything: the runtime, the selection reason, where the runtime id came
from, every visible harness with its support result, and the error of a
fail-closed decision.

With --offline it reads AgentHarness, RuntimePolicy, AgentSession and Namespace
manifests (multi-document YAML or JSON) instead of a cluster. Manifests are
evaluated as given; a harness without status counts as registered and ready.
Without --offline it reads the objects through the current kubeconfig.

The session is the AgentSession whose sessionId equals the attempt's, else whose
sessionKey does, else the only one; without one, the attempt's agentHarnessId and
agentHarnessRuntimeOverride are evaluated ("what if") in --namespace.

Exit codes: 0 a decision, 3 a fail-closed decision, 2 bad input (including an
attempt that contradicts its session), 1 other failures.`,
		Example: `  kubectl harness explain --offline -f config/samples --attempt attempt.json
  echo '{"agentId":"main","sessionId":"s-1","provider":"openai","modelId":"gpt-5.5"}' |
    kubectl harness explain --offline -f manifests/ --attempt - -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runExplain(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "Manifest file or directory (repeatable); required with --offline.")
	f.StringVar(&o.attempt, "attempt", "", "The prepared attempt as JSON: a file, or - for standard input.")
	f.StringVarP(&o.output, "output", "o", "text", "Output format: text, json or yaml.")
	f.BoolVar(&o.offline, "offline", false, "Read manifests given with -f instead of a cluster.")
	f.StringVarP(&o.namespace, "namespace", "n", "", "Namespace of the session when no AgentSession is found (default: the kubeconfig's, or default).")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "Path of the kubeconfig (online mode).")
	f.StringVar(&o.context, "context", "", "kubeconfig context (online mode).")
	return cmd
}

func runExplain(ctx context.Context, o explainOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	switch o.output {
	case "text", "json", "yaml":
	default:
		return badInput(fmt.Errorf("--output: must be text, json or yaml, got %q", o.output))
	}
	if o.attempt == "" {
		return badInput(errors.New("--attempt: required (a file, or - for standard input)"))
	}
	attempt, err := readAttempt(o.attempt, stdin)
	if err != nil {
		return err
	}

	var inv *inventory
	if o.offline {
		if len(o.files) == 0 {
			return badInput(errors.New("--filename: at least one -f is required with --offline"))
		}
		if inv, err = loadManifests(o.files); err != nil {
			return badInput(err)
		}
		if o.namespace == "" {
			o.namespace = "default"
		}
	} else {
		if len(o.files) > 0 {
			return badInput(errors.New("--filename: manifests are read only with --offline"))
		}
		if inv, o.namespace, err = loadCluster(ctx, o.kubeconfig, o.context, o.namespace); err != nil {
			return err
		}
	}
	for _, w := range inv.admissionWarnings() {
		_, _ = fmt.Fprintln(stderr, "warning:", w)
	}

	session, namespace, note := inv.sessionFor(attempt, o.namespace)
	if note != "" {
		_, _ = fmt.Fprintln(stderr, "note:", note)
	}
	snap, err := selection.SnapshotFor(inv.harnesses, inv.policies, namespace, inv.namespaceLabels[namespace], session)
	if err != nil {
		return badInput(err)
	}
	snap.AssumeReadyWithoutStatus = o.offline

	decision := selection.Select(snap, attempt)
	if decision.Error != nil && decision.Error.Code == wire.CodeSessionMismatch {
		return badInput(errors.New(decision.Error.Message))
	}
	if err := printDecision(stdout, o.output, decision, session, namespace); err != nil {
		return err
	}
	if decision.Error != nil {
		return &exitError{code: exitFailClosed}
	}
	return nil
}

// readAttempt decodes the attempt strictly; every problem names its field.
func readAttempt(path string, stdin io.Reader) (*wire.Attempt, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, badInput(fmt.Errorf("--attempt: %w", err))
		}
		defer func() { _ = f.Close() }()
		r = f
	}
	a, err := wire.DecodeAttempt(r)
	if err != nil {
		return nil, badInput(fmt.Errorf("attempt: %w", err))
	}
	return a, nil
}

func printDecision(w io.Writer, format string, d wire.Decision, session *v1alpha1.AgentSession, namespace string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	case "yaml":
		out, err := yaml.Marshal(d)
		if err != nil {
			return fmt.Errorf("encode decision: %w", err)
		}
		_, err = w.Write(out)
		return err
	}
	return printText(w, d, session, namespace)
}

func printText(w io.Writer, d wire.Decision, session *v1alpha1.AgentSession, namespace string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	line := func(k, v string) { _, _ = fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
	if session != nil {
		line("Session", session.Namespace+"/"+session.Name)
	} else {
		line("Session", "(none: what-if in namespace "+namespace+")")
	}
	if d.Error != nil {
		line("Decision", "FAIL CLOSED")
		line("Error", string(d.Error.Code))
		line("Message", d.Error.Message)
		scope := string(d.Error.Scope)
		if scope == "" {
			scope = "-"
		}
		line("Scope", scope)
		line("Retryable", yesNo(d.Error.Retryable))
	} else {
		runtime := d.Runtime
		if d.HarnessRef != nil {
			runtime += fmt.Sprintf(" (AgentHarness %s/%s)", d.HarnessRef.Namespace, d.HarnessRef.Name)
		}
		if d.CLIBackend != "" {
			runtime += " (CLI backend " + d.CLIBackend + ")"
		}
		line("Runtime", runtime)
		line("Reason", string(d.Reason))
	}
	if d.RequestedRuntime != "" {
		line("Requested runtime", d.RequestedRuntime)
	}
	if d.RuntimeSource != "" {
		line("Runtime source", string(d.RuntimeSource))
	}
	if len(d.MatchedPolicies) > 0 {
		line("Policies", strings.Join(d.MatchedPolicies, ", "))
	}
	if d.Pin != nil {
		line("Pin", d.Pin.HarnessID+" ("+pinUse[d.Pin.Use]+")")
	}
	if d.ToolPolicy != nil {
		tp := "unrestricted"
		if d.ToolPolicy.Restricted {
			tp = "restricted (" + strings.Join(d.ToolPolicy.Reasons, "; ") + ")"
		}
		if len(d.ToolPolicy.SafeDeniedTools) > 0 {
			tp += "; safe-denied: " + strings.Join(d.ToolPolicy.SafeDeniedTools, ", ")
		}
		line("Tool policy", tp)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Routes) > 0 {
		_, _ = fmt.Fprintln(w, "Routes:")
		rw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(rw, "  ROUTE\tRUNTIME\tREASON")
		for _, r := range d.Routes {
			outcome, why := r.Runtime, string(r.Reason)
			if r.Error != nil {
				outcome, why = "FAIL CLOSED", string(r.Error.Code)+": "+r.Error.Message
			}
			_, _ = fmt.Fprintf(rw, "  %s\t%s\t%s\n", r.Route, outcome, why)
		}
		if err := rw.Flush(); err != nil {
			return err
		}
	}
	_, _ = fmt.Fprintln(w, "Candidates:")
	if len(d.Candidates) == 0 {
		_, _ = fmt.Fprintln(w, "  (no AgentHarness is visible to this namespace)")
		return nil
	}
	cw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(cw, "  HARNESS\tOBJECT\tSUPPORTED\tPRIORITY\tREASON")
	for _, c := range d.Candidates {
		reason := c.Reason
		if c.FallbackRuntime != "" {
			reason += " (fallback: " + c.FallbackRuntime + ")"
		}
		_, _ = fmt.Fprintf(cw, "  %s\t%s/%s\t%s\t%d\t%s\n", c.HarnessID, c.HarnessRef.Namespace, c.HarnessRef.Name,
			yesNo(c.Supported), c.Priority, reason)
	}
	return cw.Flush()
}

// pinUse says in words how a decision used the ownership pin.
var pinUse = map[wire.PinUseKind]string{
	wire.PinUnchecked: "took part, unchecked: the session's model selection is locked and the attempt's route facts are pending",
	wire.PinChecked:   "took part, checked against the attempt's route facts: the session's model selection is locked",
	wire.PinUnlocked:  "took no part: the session's model selection is not locked",
	wire.PinStale:     "took no part: a reset made it stale",
	wire.PinAuto:      "a pin of auto: policy decides and the session's override is set aside",
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
