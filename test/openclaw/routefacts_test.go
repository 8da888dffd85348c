//go:build e2e

package openclaw

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/openclaw/harness-operator/test/stubmodel"
)

// What OpenClaw prepared is what it handed the plugin's supports() (the
// plugin logs it at debug level, as OpenClaw gave it: support-log.ts); what
// the dispatcher received is in its `agent harness selected` record. Both
// are JSON objects of the same fields, compared whole: a fact the plugin
// dropped, added or changed fails the spec.
var _ = Describe("OpenClaw's route facts", func() {
	It("reach the dispatcher unchanged", func(ctx context.Context) {
		marker := "marker-" + randomHex()
		stub.When(marker, stubmodel.Text("Route reply "+marker))
		s := newSession(ctx, "")
		logged := gateway.logSize()

		run := gateway.turn(ctx, s.id, s.key, "Say hello "+marker)

		Expect(run.exit).To(Equal(0), "%s", run)
		prepared := gateway.preparedRouteFacts(logged, model)
		Expect(prepared).To(HaveLen(1), "one set of route facts OpenClaw prepared for the attempt on %s in this run:\n%s", model, run)
		received := cluster.receivedRouteFacts(agentsNS + "/" + s.name)
		Expect(received).To(HaveLen(1), "one decision for the session's turn")
		Expect(received[0]).To(MatchJSON(prepared[0]), "the dispatcher decided on the facts OpenClaw prepared")
		// Not two empty objects: OpenClaw prepared the facts a route has.
		var facts map[string]any
		Expect(json.Unmarshal([]byte(prepared[0]), &facts)).To(Succeed())
		Expect(facts).To(HaveKey("api"))
		Expect(facts).To(HaveKey("requestTransportOverrides"))
		Expect(facts).To(HaveKey("preparedAuth"))
		AddReportEntry("route facts OpenClaw prepared and the dispatcher received", prepared[0])
	})
})

// logSize is where OpenClaw's log file ends now: a spec reads what its own
// run appended.
func (o *openClaw) logSize() int64 {
	GinkgoHelper()
	fi, err := os.Stat(o.logPath())
	if os.IsNotExist(err) {
		return 0
	}
	Expect(err).NotTo(HaveOccurred())
	return fi.Size()
}

// supportLines are the plugin's supports() records for model in OpenClaw's
// log written after offset (support-log.ts), in order.
func (o *openClaw) supportLines(offset int64, model string) []string {
	GinkgoHelper()
	b, err := os.ReadFile(o.logPath())
	Expect(err).NotTo(HaveOccurred(), "OpenClaw's log (config logging.file)")
	Expect(int64(len(b))).To(BeNumerically(">=", offset))
	prefix := "harness-operator: supports " + model + ": "
	var out []string
	for _, line := range logLines(b[offset:]) {
		var entry any
		if json.Unmarshal(line, &entry) != nil {
			continue
		}
		for _, msg := range stringsIn(entry) {
			if strings.HasPrefix(msg, prefix) {
				out = append(out, msg)
			}
		}
	}
	return out
}

// supportVerdicts are the plugin's supports() answers for model after
// offset, without the route facts.
func (o *openClaw) supportVerdicts(offset int64, model string) []string {
	GinkgoHelper()
	var out []string
	for _, l := range o.supportLines(offset, model) {
		out = append(out, l[:strings.Index(l, factsAt)])
	}
	return out
}

// factsAt precedes the route facts' JSON, the end of a supports() record.
const factsAt = "; OpenClaw's route facts: "

// preparedRouteFacts are the distinct route facts of prepared attempts that
// OpenClaw handed the plugin's supports() for model in the log written after
// offset. OpenClaw also asks supports() before it prepares the route's auth
// (those facts have no preparedAuth); the attempt runs on the prepared ones.
func (o *openClaw) preparedRouteFacts(offset int64, model string) []string {
	GinkgoHelper()
	seen := map[string]bool{}
	var out []string
	for _, l := range o.supportLines(offset, model) {
		facts := l[strings.Index(l, factsAt)+len(factsAt):]
		if facts != "none" && strings.Contains(facts, `"preparedAuth"`) && !seen[facts] {
			seen[facts] = true
			out = append(out, facts)
		}
	}
	return out
}

// receivedRouteFacts are the modelProvider fields of the dispatcher's
// `agent harness selected` records for session ("namespace/name") that have
// one.
func (c *devCluster) receivedRouteFacts(session string) []string {
	GinkgoHelper()
	b, err := os.ReadFile(c.proc.LogPath)
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, line := range logLines(b) {
		var rec struct {
			Msg           string          `json:"msg"`
			Session       string          `json:"session"`
			ModelProvider json.RawMessage `json:"modelProvider"`
		}
		if json.Unmarshal(line, &rec) != nil || rec.Msg != "agent harness selected" || rec.Session != session || len(rec.ModelProvider) == 0 {
			continue // another record, or a decision without route facts (…/decide)
		}
		out = append(out, string(rec.ModelProvider))
	}
	return out
}

func logLines(b []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		out = append(out, bytes.Clone(sc.Bytes()))
	}
	return out
}

// stringsIn are the strings anywhere in a decoded JSON value: OpenClaw's
// file log keeps a message among its entry's fields.
func stringsIn(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, stringsIn(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range t {
			out = append(out, stringsIn(e)...)
		}
		return out
	}
	return nil
}
