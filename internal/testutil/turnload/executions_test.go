package turnload

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A turn's execution is a model request whose last input item is the user
// message with its marker: a tool round trip inside the turn is not one,
// the same turn asked again is a second.
func TestExecutionsCountsFirstRequestsByMarker(t *testing.T) {
	stub := stubmodel.Start(t)
	user := func(text string) string {
		return `{"type":"message","role":"user","content":[{"type":"input_text","text":"` + text + `"}]}`
	}
	toolRoundTrip := `{"type":"function_call","call_id":"c1","name":"fault_probe","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"c1","output":"probe ok"}`
	for _, input := range []string{
		user(Marker("s-1") + "go"),
		user(Marker("s-1")+"go") + "," + toolRoundTrip, // the same turn after its tool call
		user(Marker("s-2") + "go"),
		user(Marker("s-1") + "go"), // s-1 run again
	} {
		resp, err := http.Post(stub.BaseURL()+"/responses", "application/json",
			strings.NewReader(`{"model":"stub-model","stream":true,"input":[`+input+`]}`))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	executions := Executions(stub)
	for runID, want := range map[string]int{"s-1": 2, "s-2": 1, "s-3": 0} {
		if got := executions(runID); got != want {
			t.Errorf("executions of %s = %d, want %d", runID, got, want)
		}
	}
}
