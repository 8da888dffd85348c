package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A session that the namespace's policy moves between two AgentHarnesses
// keeps its conversation: the new harness's thread starts with the user and
// assistant messages of the dispatcher's transcript mirror (a thread of
// another harness is never resumed).
var _ = Describe("A session that moves to another AgentHarness", Ordered, func() {
	var (
		ns  string
		pol *v1alpha1.RuntimePolicy
	)
	const name = "mv"
	routed := func(runID, prompt string) *wire.TurnRequest {
		req := withRouteFacts(textReq(runID, prompt))
		req.ModelProvider.RuntimePolicy.CompatibleIDs = []string{"codex", "codex-b"}
		return req
	}
	// mirrorSeeds are the data of the turn's reseeded events, with their text.
	mirrorSeeds := func(evs []event) []map[string]any {
		var out []map[string]any
		for _, a := range reseeded(evs) {
			var d map[string]any
			Expect(json.Unmarshal(a.Data, &d)).To(Succeed())
			d["text"] = a.Text
			out = append(out, d)
		}
		return out
	}
	BeforeAll(func() {
		ns = newNamespace()
		a := registerCodex(ns, codexSrv.URL, true)
		b := &v1alpha1.AgentHarness{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "codex-b"}, Spec: *a.Spec.DeepCopy()}
		b.Spec.HarnessID = "codex-b"
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		waitHarness(b, v1alpha1.HarnessConditionReady, metav1.ConditionTrue)
		pol = nsPolicy(ns, "codex")
		newSession(ns, name, "codex/stub-model")
	})

	It("starts the other harness's thread with the conversation so far, and back again", func() {
		stub.When("mv-first", stubmodel.Text("MV-FIRST-REPLY"))
		evs, err := turn(ns, name, routed("run-mv1", "mv-first about Chile"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AgentHarnessID).To(Equal("codex"))
		first := getSession(ns, name).Status.NativeBinding

		setPolicyRuntime(pol, "codex-b")
		stub.When("mv-second", stubmodel.Text("MV-SECOND-REPLY"))
		evs, err = turn(ns, name, routed("run-mv2", "mv-second and its capital?"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AgentHarnessID).To(Equal("codex-b"))
		second := getSession(ns, name).Status.NativeBinding
		Expect(second.HarnessName).To(Equal("codex-b"))
		Expect(second.ThreadID).NotTo(Equal(first.ThreadID))
		req, err := stub.WaitMarker(ctx, "mv-second")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.UserTexts()).To(ContainElement("mv-first about Chile"))
		Expect(req.AssistantTexts()).To(ContainElement("MV-FIRST-REPLY"))
		seeds := mirrorSeeds(evs)
		Expect(seeds).To(HaveLen(1))
		Expect(seeds[0]["mirrorMessages"]).To(BeEquivalentTo(2))
		Expect(seeds[0]["text"]).To(ContainSubstring("ran on another harness"))

		setPolicyRuntime(pol, "codex")
		stub.When("mv-third", stubmodel.Text("MV-THIRD-REPLY"))
		evs, err = turn(ns, name, routed("run-mv3", "mv-third and its population?"))
		Expect(err).NotTo(HaveOccurred())
		Expect(resultOf(evs).AgentHarnessID).To(Equal("codex"))
		Expect(getSession(ns, name).Status.NativeBinding.ThreadID).NotTo(Equal(first.ThreadID),
			"codex's old thread lacks the codex-b turn: a new thread starts from the mirror")
		req, err = stub.WaitMarker(ctx, "mv-third")
		Expect(err).NotTo(HaveOccurred())
		Expect(req.UserTexts()).To(ContainElements("mv-first about Chile", "mv-second and its capital?"))
		Expect(req.AssistantTexts()).To(ContainElements("MV-FIRST-REPLY", "MV-SECOND-REPLY"))
		Expect(mirrorSeeds(evs)[0]["mirrorMessages"]).To(BeEquivalentTo(4))
	})
})

// The mirror's messages a moved session's new thread starts with: the user
// and assistant messages since the last reset marker, the newest within
// the gatewayTranscript bounds, the rest counted as left out; tool records
// and torn lines are skipped.
func TestMirrorWriterKeepsTheNewestMessagesSinceTheReset(t *testing.T) {
	rec := func(typ, role, text string) string {
		b, _ := json.Marshal(wire.TranscriptRecord{Type: typ, Role: role, Text: text})
		return string(b) + "\n"
	}
	big := strings.Repeat("x", wire.MaxGatewayTranscriptBytes/2)
	for _, tc := range []struct {
		name        string
		lines       string
		wantFirst   string
		wantKept    int
		wantDropped int
	}{
		{"messages only", rec("message", "user", "q1") + rec("tool_call", "assistant", "") + rec("message", "assistant", "a1"), "q1", 2, 0},
		{"a reset forgets what came before",
			rec("message", "user", "old") + `{"type":"reset","generation":1,"at":"2026-12-02T00:00:00Z"}` + "\n" + rec("message", "user", "new"), "new", 1, 0},
		{"a torn last line is skipped", rec("message", "user", "q1") + `{"type":"mess`, "q1", 1, 0},
		{"the byte bound drops the oldest", rec("message", "user", big) + rec("message", "assistant", big) + rec("message", "user", "q2"), big, 2, 1},
		{"the message bound drops the oldest", func() string {
			var b strings.Builder
			for i := range wire.MaxGatewayTranscriptMessages + 3 {
				b.WriteString(rec("message", "user", fmt.Sprintf("m%d", i)))
			}
			return b.String()
		}(), "m3", wire.MaxGatewayTranscriptMessages, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &mirrorWriter{}
			// Written in small pieces, as a stream arrives.
			for s := tc.lines; s != ""; {
				n := min(7, len(s))
				if _, err := w.Write([]byte(s[:n])); err != nil {
					t.Fatal(err)
				}
				s = s[n:]
			}
			w.line(w.partial)
			if len(w.kept) != tc.wantKept || w.dropped != tc.wantDropped || (tc.wantKept > 0 && w.kept[0].Text != tc.wantFirst) {
				t.Fatalf("kept %d (first %.10q), dropped %d; want %d (first %.10q), %d", len(w.kept), first(w.kept), w.dropped,
					tc.wantKept, tc.wantFirst, tc.wantDropped)
			}
		})
	}
}

func first(m []wire.GatewayMessage) string {
	if len(m) == 0 {
		return ""
	}
	return m[0].Text
}
