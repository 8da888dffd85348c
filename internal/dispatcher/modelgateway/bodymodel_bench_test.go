package modelgateway

import (
	"strings"
	"testing"
)

// BenchmarkBodyModel: finding the model in a body the size of a Codex
// first turn (about 26 KB, mostly its tools), as every request does before
// it is forwarded (docs/benchmarks/gateway.md: a large share of the
// gateway's CPU per request).
func BenchmarkBodyModel(b *testing.B) {
	body := []byte(strings.Replace(testBody, `"tools":[]`,
		`"tools":[{"type":"function","name":"shell","description":"`+strings.Repeat("describe ", 2900)+`"}]`, 1))
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if m, invalid := bodyModel(body); m != model || invalid != "" {
			b.Fatalf("bodyModel = %q, %q", m, invalid)
		}
	}
}
