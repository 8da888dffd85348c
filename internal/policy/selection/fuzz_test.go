package selection

import (
	"bytes"
	"testing"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// fuzzSnapshot has enough variety for Select to take every branch on fuzzed attempts.
func fuzzSnapshot(sess *v1alpha1.AgentSession) Snapshot {
	return Snapshot{
		Harnesses: []*v1alpha1.AgentHarness{
			harness("codex"), acme("h1", 5), acme("h2", 5, autoSel(v1alpha1.AutoSelectionExplicitOnly)),
			harness("slow", belowFloorCond("old")), harness("codex", objName("other", "dup"), created(1)),
		},
		Policies: []*v1alpha1.RuntimePolicy{
			policy("p1", 0, prov("openai", "auto", row{"gpt-4.1", "openclaw"}), model("anthropic/*", "claude-cli")),
			policy("p2", 1, agent("main", "gpt-5.5", "slow"), model("acme/m1", "h1"), deny()),
		},
		Session: sess,
	}
}

// FuzzSelectDecodedAttempt: Select never panics on an attempt the wire
// decoder accepts, and always decides something.
func FuzzSelectDecodedAttempt(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"toolsAllow":[]}`, `{"provider":"acme","modelId":"m1"}`,
		`{"modelId":"openai/gpt-4.1","agentHarnessRuntimeOverride":"PI"}`,
		`{"modelProviders":[{"requestTransportOverrides":"none","runtimePolicy":{"compatibleIds":["h1"]}},{"requestTransportOverrides":"present"}]}`,
		`{"provider":"openai","modelId":"gpt-5.5","agentHarnessId":"codex","modelProvider":{"api":"openai-responses","requestTransportOverrides":"none","preparedAuth":{"source":"profile","mode":"oauth","requirement":"subscription"}},"toolPolicy":{"layers":[{"allow":[]}]},"pluginHarnessToolPolicyRestricted":true}`,
	} {
		f.Add([]byte(seed))
	}
	sessions := []*v1alpha1.AgentSession{nil, session(openaiGPT, pinned("codex")), session("acme/m1", override("h2"))}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := wire.DecodeAttempt(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, s := range sessions {
			d := Select(fuzzSnapshot(s), a)
			if (d.Error == nil) == (d.Runtime == "") {
				t.Fatalf("decision has neither or both of runtime and error: %+v", d)
			}
		}
	})
}
