package turnload

import (
	"regexp"

	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// Executions counts the executions of each turn the model saw, in one pass
// over the stub's requests: requests that end with a user message carrying
// a turn's Marker — a turn's first request. A tool round trip inside the
// turn asks the model again with the same user message followed by the
// call and its output, which is not a second execution; the turn run again
// would be. Call it once the load has stopped.
func Executions(stub *stubmodel.Server) func(runID string) int {
	counts := map[string]int{}
	for _, r := range stub.Requests() {
		if len(r.Input) == 0 {
			continue
		}
		last := r.Input[len(r.Input)-1]
		if last.Type != "message" || last.Role != "user" {
			continue
		}
		for _, m := range markerRunID.FindAllStringSubmatch(last.Text(), -1) {
			counts[m[1]]++
		}
	}
	return func(runID string) int { return counts[runID] }
}

// markerRunID finds the runIds of the Markers in a text.
var markerRunID = regexp.MustCompile(`load-(\S+) `)
