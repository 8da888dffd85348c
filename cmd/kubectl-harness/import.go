package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/cli/openclawconfig"
)

func newImportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Convert other configuration into harness-operator objects",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newImportOpenClawConfigCommand())
	return cmd
}

func newImportOpenClawConfigCommand() *cobra.Command {
	var name, overrides string
	cmd := &cobra.Command{
		Use:   "openclaw-config <openclaw.json|->",
		Short: "Print the RuntimePolicy equivalent to an OpenClaw config's runtime settings",
		Long: `openclaw-config reads an OpenClaw config file (JSON5, as OpenClaw reads it) and
prints the RuntimePolicy YAML with the same runtime settings: provider runtimes
(models.providers.<p>.agentRuntime) and catalog rows, agents.defaults.models, and
per-agent models (agents.list[] / agents.entries). Legacy whole-agent runtime
pins and legacy codex/* model refs are reported on stderr.`,
		Example: `  kubectl harness import openclaw-config ~/.openclaw/openclaw.json --name codex-only --session-overrides Deny | kubectl apply -f -`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImportOpenClawConfig(args[0], name, overrides, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&name, "name", "openclaw-config", "metadata.name of the RuntimePolicy.")
	cmd.Flags().StringVar(&overrides, "session-overrides", "", "spec.sessionOverrides: Allow or Deny (default: omitted, which means Allow).")
	return cmd
}

func runImportOpenClawConfig(path, name, overrides string, stdin io.Reader, stdout, stderr io.Writer) error {
	switch v1alpha1.SessionOverridePolicy(overrides) {
	case "", v1alpha1.SessionOverridesAllow, v1alpha1.SessionOverridesDeny:
	default:
		return badInput(fmt.Errorf("--session-overrides: must be Allow or Deny, got %q", overrides))
	}
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return badInput(fmt.Errorf("read OpenClaw config: %w", err))
	}
	res, err := openclawconfig.Import(data, openclawconfig.Options{Name: name, SessionOverrides: v1alpha1.SessionOverridePolicy(overrides)})
	if err != nil {
		return badInput(err)
	}
	for _, w := range res.Warnings {
		_, _ = fmt.Fprintln(stderr, "warning:", w)
	}
	out, err := policyYAML(res.Policy)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}

// policyYAML renders a RuntimePolicy for `kubectl apply`: no empty status and
// no null creationTimestamp.
func policyYAML(p *v1alpha1.RuntimePolicy) ([]byte, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
	if err != nil {
		return nil, fmt.Errorf("encode RuntimePolicy: %w", err)
	}
	delete(obj, "status")
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	out, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode RuntimePolicy: %w", err)
	}
	return out, nil
}
