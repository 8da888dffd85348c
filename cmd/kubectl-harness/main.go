// Command kubectl-harness is the harness-operator CLI. Installed on the PATH it
// is also a kubectl plugin (`kubectl harness …`).
//
//	kubectl harness explain --offline -f <file|dir> --attempt <file|->   why a turn runs where it runs
//	kubectl harness import openclaw-config <openclaw.json>               a RuntimePolicy from an OpenClaw config
//	kubectl harness session create --model <p/m> --key <sessionKey>      create an AgentSession
//	kubectl harness turn <session> --prompt "…"                          stream a turn through the dispatcher
//	kubectl harness status <session>                                     the session's status view
//	kubectl harness transcript <session>                                 the session's transcript mirror
//
// Exit codes: 0 success (a decision, an ok turn), 3 a fail-closed decision or
// a turn that did not end ok, 2 bad input (the message names the field), 1 any
// other failure.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes shared by every subcommand.
const (
	exitOK         = 0
	exitFailure    = 1
	exitBadInput   = 2
	exitFailClosed = 3
)

// exitError carries the exit code of a failure up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// badInput marks err as a request error (exit 2).
func badInput(err error) error { return &exitError{code: exitBadInput, err: err} }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes the CLI with args and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand(stdin, stdout, stderr)
	root.SetArgs(args)
	return report(root.Execute(), stderr)
}

// report writes what err tells the user to stderr ("error: …"; a
// fail-closed decision was written where it was made) and returns the exit
// code for it.
func report(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitFailClosed {
			_, _ = fmt.Fprintln(stderr, "error:", ee.err)
		}
		return ee.code
	}
	_, _ = fmt.Fprintln(stderr, "error:", err)
	return exitFailure
}

func newRootCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kubectl-harness",
		Short:         "Explain and drive OpenClaw agent harness turns",
		Long:          "kubectl-harness is the harness-operator CLI; as a kubectl plugin it runs as `kubectl harness`.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Flag errors are bad input (exit 2), like every other request error.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	root.AddCommand(newExplainCommand(), newImportCommand())
	root.AddCommand(newTurnCommand(), newStatusCommand(), newSessionCommand(), newTranscriptCommand())
	return root
}
