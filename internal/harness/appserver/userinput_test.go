package appserver_test

import (
	"context"
	"testing"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// In the default collaboration mode Codex refuses request_user_input itself
// (the model is told it is unavailable) unless the thread's config enables
// the under-development feature default_mode_request_user_input; then the
// request reaches the client and the answer reaches the model. The operator
// does not enable it (docs/codex-app-server.md, "Approvals and user input").
func TestDefaultModeUserInputNeedsTheFeatureFlag(t *testing.T) {
	t.Parallel()
	r := startRig(t, codextest.Options{})
	c := connectStdio(t, r.srv, appserver.Options{})
	ask := stubmodel.CallJSON("request_user_input", map[string]any{"questions": []any{map[string]any{
		"id": "color", "header": "Color", "question": "Which color?", "options": []any{map[string]any{"label": "Red", "description": "warm"}}}}})
	r.stub.When("ASKPLAIN", ask, stubmodel.Text("done"))
	r.stub.When("ASKFLAG", ask, stubmodel.Text("done"))
	cases := []struct {
		marker string
		config map[string]any
		asked  int
		told   string
	}{
		{"ASKPLAIN", nil, 0, "request_user_input is unavailable in Default mode"},
		{"ASKFLAG", map[string]any{"features": map[string]any{"default_mode_request_user_input": true}}, 1,
			`{"answers":{"color":{"answers":["Red"]}}}`},
	}
	for _, tc := range cases {
		asked := 0
		th := startThread(t, c, r.srv, appserver.ThreadStartParams{Ephemeral: true, Config: tc.config}, &appserver.Handlers{
			UserInput: func(context.Context, appserver.UserInputRequest) map[string][]string {
				asked++
				return map[string][]string{"color": {"Red"}}
			}})
		if res := runTurn(t, th, tc.marker+" me"); res.Status != appserver.TurnCompleted {
			t.Fatalf("%s: turn %s", tc.marker, res.Status)
		}
		reqs := r.stub.RequestsContaining(tc.marker)
		outs := reqs[len(reqs)-1].FunctionCallOutputs()
		if asked != tc.asked || len(outs) != 1 || outs[0].Output != tc.told {
			t.Errorf("%s: asked %d times, model told %+v; want %d, %q", tc.marker, asked, outs, tc.asked, tc.told)
		}
	}
}
