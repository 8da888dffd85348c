package httpapi

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestSelectedEventCarriesTheTurnsFieldsWithTheDecisionUnchanged: the
// `selected` event a client reads is the journaled decision with runId
// and turnToken set, whatever the decision's shape — the same object the
// decision merged with those two fields would decode to.
func TestSelectedEventCarriesTheTurnsFieldsWithTheDecisionUnchanged(t *testing.T) {
	cases := []struct {
		name    string
		payload string
		want    map[string]any
	}{
		{name: "a decision", payload: `{"harness":{"namespace":"a","name":"codex"},"candidates":[{"id":"codex","score":1}],"reason":"x"}`,
			want: map[string]any{"harness": map[string]any{"namespace": "a", "name": "codex"}, "candidates": []any{map[string]any{"id": "codex", "score": 1.0}},
				"reason": "x", "runId": "run-1", "turnToken": "tok\"en"}},
		{name: "an empty object", payload: `{}`, want: map[string]any{"runId": "run-1", "turnToken": "tok\"en"}},
		{name: "spaces around the object", payload: " {\"a\":1} \n", want: map[string]any{"a": 1.0, "runId": "run-1", "turnToken": "tok\"en"}},
		{name: "a journaled runId is replaced", payload: `{"runId":"other","a":1}`, want: map[string]any{"a": 1.0, "runId": "run-1", "turnToken": "tok\"en"}},
		{name: "a nested turnToken stays where it is", payload: `{"x":{"turnToken":"t"}}`,
			want: map[string]any{"x": map[string]any{"turnToken": "t"}, "runId": "run-1", "turnToken": "tok\"en"}},
		{name: "not an object", payload: `null`, want: map[string]any{"runId": "run-1", "turnToken": "tok\"en"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := withTurnFields(json.RawMessage(tc.payload), "run-1", `tok"en`)
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%s is not JSON: %v", out, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %s\nwant %v", out, tc.want)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(out, &keys); err != nil || len(keys) != len(tc.want) {
				t.Errorf("%s: %d keys, want %d (a field written twice?)", out, len(keys), len(tc.want))
			}
		})
	}
}

// BenchmarkSelectedEventFields is the per-turn cost of a selected event's
// two fields, with 64 candidates in the decision.
func BenchmarkSelectedEventFields(b *testing.B) {
	type candidate struct {
		ID      string   `json:"id"`
		Reasons []string `json:"reasons"`
	}
	cands := make([]candidate, 64)
	for i := range cands {
		cands[i] = candidate{ID: "harness-" + string(rune('a'+i%26)), Reasons: []string{"route matched", "capability ok"}}
	}
	payload, _ := json.Marshal(map[string]any{"harness": "codex", "candidates": cands})
	b.ReportAllocs()
	for b.Loop() {
		withTurnFields(payload, "run-1", "token")
	}
}
