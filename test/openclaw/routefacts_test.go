//go:build e2e

package openclaw

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

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
