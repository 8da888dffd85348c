package codex

import (
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A session's shell command does not see the server's credentials in its
// environment when the server runs with codexconfig.ToolEnvironmentArgs (as
// the operator's pods do): not the provider key Codex itself uses, not the
// usual *KEY*/*SECRET*/*TOKEN* variables, not a Secret-backed variable of
// another name that the harness names. Control: a plain variable of the
// server's environment is visible to the same command.
func TestToolProcessesDoNotSeeCredentials(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{
		ExtraArgs: codexconfig.ToolEnvironmentArgs([]string{"PROVIDER_CREDENTIAL", `ODD"NAME`}),
		Env: []string{"OPENAI_API_KEY=canary-openai-key", "AWS_SECRET_ACCESS_KEY=canary-aws-secret",
			"GITHUB_TOKEN=canary-github-token", "PROVIDER_CREDENTIAL=canary-provider-credential",
			"PLAIN_SETTING=plain-visible-value"},
	})
	res := run(t, r, r.input(stubmodel.ShellDirective+" env"), &recorder{})
	if res.Terminal.Kind != wire.TerminalOK || len(res.AssistantTexts) == 0 {
		t.Fatalf("the env turn did not complete: %+v", res)
	}
	out := strings.Join(res.AssistantTexts, "\n")
	if !strings.Contains(out, "PLAIN_SETTING=plain-visible-value") {
		t.Fatalf("control: the command's environment lacks a plain variable; output:\n%s", out)
	}
	for _, secret := range []string{"canary-openai-key", "canary-aws-secret", "canary-github-token",
		"canary-provider-credential", codextest.StubAPIKey} {
		if strings.Contains(out, secret) {
			t.Errorf("the command's environment shows %q", secret)
		}
	}
}
