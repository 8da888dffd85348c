package toolpolicy

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// closes reports whether a verdict keeps a tool from the harness's native
// surface: isolation closes every tool, a safe-denied tool the harness denies
// itself.
func closes(v Verdict, tool string) bool {
	return v.Restricted || slices.Contains(v.SafeDeniedTools, Normalize(tool))
}

// withDeny is in with one more deny entry: on layer i, or on a new layer
// after the others when i is past them. in is not modified.
func withDeny(in Input, i int, entry string) Input {
	out := in
	out.Layers = make([]Layer, len(in.Layers))
	for j, l := range in.Layers {
		l.Deny = slices.Clone(l.Deny)
		out.Layers[j] = l
	}
	if i < len(out.Layers) {
		out.Layers[i].Deny = append(out.Layers[i].Deny, entry)
	} else {
		out.Layers = append(out.Layers, Layer{Deny: []string{entry}})
	}
	return out
}

// FuzzEvaluateDenyNeverRelaxes: Evaluate never panics, is deterministic and
// leaves its input alone, its verdict is consistent (restricted exactly when
// it gives reasons; safe-denied tools are sorted, distinct core tools of the
// safe-deny list), and adding a deny never relaxes: a tool the verdict
// closes under a policy stays closed with one more deny entry, on any layer.
func FuzzEvaluateDenyNeverRelaxes(f *testing.F) {
	for _, seed := range []struct {
		in    string
		layer uint8
		deny  string
		tool  string
	}{
		{`{}`, 0, "exec", "exec"},
		{`{"Support":"Exact","SafeDenyTools":["exec","read"],"Layers":[{"Deny":["exec"]}]}`, 0, "read", "exec"},
		{`{"Support":"Exact","SafeDenyTools":["exec","read"],"Layers":[{"Deny":["exec"]}]}`, 0, "write", "exec"},
		{`{"Support":"Exact","SafeDenyTools":["exec","process"],"Layers":[{"Deny":["bash"]}]}`, 1, "group:runtime", "process"},
		{`{"Support":"Exact","SafeDenyTools":["Exec"," read "],"Layers":[{"Name":"g","Deny":["READ"]},{"Allow":["*"]}]}`, 1, "*", "read"},
		{`{"Profile":"coding","AlsoAllow":["browser"],"NativeTools":["exec","apply_patch"]}`, 3, "", "edit"},
		{`{"Profile":"nonsense"}`, 0, "exec", "exec"},
		{`{"ToolsAllow":[],"Layers":[{"Allow":[]}]}`, 0, "exec", "exec"},
		{`{"DisableTools":true,"HostRestricted":true}`, 0, "group:fs", "read"},
		{`{"Support":"Exact","SafeDenyTools":["group:fs","*"],"Layers":[{"Deny":["group:fs"]}]}`, 0, "unknown-tool", "write"},
	} {
		f.Add([]byte(seed.in), seed.layer, seed.deny, seed.tool)
	}
	f.Fuzz(func(t *testing.T, data []byte, layer uint8, deny, tool string) {
		var in Input
		if json.Unmarshal(data, &in) != nil {
			return
		}
		before, _ := json.Marshal(in)
		v := Evaluate(in)
		if after, _ := json.Marshal(in); string(after) != string(before) {
			t.Fatalf("Evaluate changed its input:\n%s\n%s", before, after)
		}
		if again := Evaluate(in); !reflect.DeepEqual(v, again) {
			t.Fatalf("Evaluate is not deterministic: %+v, then %+v", v, again)
		}
		if v.Restricted != (len(v.Reasons) > 0) {
			t.Fatalf("restricted %v with reasons %q", v.Restricted, v.Reasons)
		}
		if !slices.IsSorted(v.SafeDeniedTools) || len(slices.Compact(slices.Clone(v.SafeDeniedTools))) != len(v.SafeDeniedTools) {
			t.Fatalf("safe-denied tools not sorted and distinct: %q", v.SafeDeniedTools)
		}
		for _, id := range v.SafeDeniedTools {
			if !IsCoreTool(id) || !slices.ContainsFunc(in.SafeDenyTools, func(s string) bool { return Normalize(s) == id }) {
				t.Fatalf("safe-denied %q is not a core tool of the safe-deny list %q", id, in.SafeDenyTools)
			}
		}

		more := withDeny(in, int(layer), deny)
		w := Evaluate(more)
		for _, id := range append(CoreToolIDs(), tool) {
			if closes(v, id) && !closes(w, id) {
				t.Fatalf("adding deny %q to layer %d opened %q:\nbefore %+v\nafter  %+v", deny, layer, id, v, w)
			}
		}
	})
}
