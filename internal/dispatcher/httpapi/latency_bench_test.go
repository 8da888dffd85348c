package httpapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/dispatcher/engine"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// BenchmarkDispatcherOverhead measures the latency the dispatcher's HTTP API
// adds over a direct Engine.Turn: the added latency over a direct engine
// call for 200 trivial turns (p50/p99, measured side by side in one run).
//
// One run has the dispatcher benchmarks' setup (startBenchEnv: envtest, one
// real `codex app-server`, the stub model, a gateway ServiceAccount), one
// journal and one arm (newArm: a real engine.Engine and its Handler).
// Both arms use that same engine:
//
//   - direct: Engine.Turn with a fresh runId; the time is from the call to
//     the `result` event reaching the Sink (the same end point as the HTTP
//     arm). The time to Turn's return (which adds the run's end in the
//     store after `result`) is reported too.
//   - http: POST …/turns on httptest.NewTLSServer(Handler) with a real
//     ServiceAccount token (TokenReview and SubjectAccessReview through
//     KubeAuthorizer, the Handler's default verdict cache), a plain
//     http.Client (the test server's, which trusts its certificate; kept-alive
//     connections), reading the SSE stream up to the `result` event.
//
// The turns are interleaved (direct, http, direct, http, …) so drifts in
// load hit both arms alike. The engine serializes the turns of one session,
// so each arm has its own session ("direct" and "http"): no turn waits for
// the other arm's lock, and both arms' Codex threads grow by the same
// history. Every timed turn starts with the previous one fully over:
// (untimed) Engine.Turn returned or the HTTP stream was read to its end, and
// then the session's lease was free again (benchArm.settle), so the
// engine's writes after `result` never overlap the next timed turn. One
// untimed warm-up turn per arm first creates its Codex thread, its pool
// connection and the first auth verdict. The difference of medians (http p50 − direct p50) is the added
// latency; the paired per-turn differences are reported too. Timings are
// reported, never asserted.
//
// Run it (it does not run under plain `go test`):
//
//	KUBEBUILDER_ASSETS=… CODEX_BIN=$(hack/setup-codex.sh) go test -run '^$' \
//	  -bench BenchmarkDispatcherOverhead -benchtime 1x ./internal/dispatcher/httpapi/
func BenchmarkDispatcherOverhead(b *testing.B) {
	const turns = 200
	env := startBenchEnv(b, 2*(turns+1)*b.N, "KUBEBUILDER_ASSETS=... CODEX_BIN=$(hack/setup-codex.sh) go test -run '^$' -bench BenchmarkDispatcherOverhead -benchtime 1x ./internal/dispatcher/httpapi/")
	jrnl, err := journal.Open(b.TempDir(), journal.Options{})
	benchMust(b, err)
	b.Cleanup(func() { _ = jrnl.Close() })
	arm := env.newArm(b, jrnl, engine.Options{})
	directSess, httpSess := env.newSession(b, benchNS, "direct"), env.newSession(b, benchNS, "http")

	direct := func(runID string) (toResult, toReturn time.Duration) {
		t, err := arm.direct(directSess, runID)
		benchMust(b, err)
		return t.result, t.ret
	}
	viaHTTP := func(runID string) time.Duration {
		t, err := arm.viaHTTP(httpSess, runID)
		benchMust(b, err)
		return t.result
	}

	// Warm-up (untimed): Codex threads, pool connection, auth verdict.
	direct("warm-direct")
	viaHTTP("warm-http")

	var directRes, directRet, httpRes, diffs []float64
	b.ResetTimer()
	for n := range b.N {
		for i := range turns {
			dRes, dRet := direct(fmt.Sprintf("direct-%d-%d", n, i))
			hRes := viaHTTP(fmt.Sprintf("http-%d-%d", n, i))
			directRes = append(directRes, ms(dRes))
			directRet = append(directRet, ms(dRet))
			httpRes = append(httpRes, ms(hRes))
			diffs = append(diffs, ms(hRes)-ms(dRes))
		}
	}
	b.StopTimer()

	dP50, dP99 := percentile(directRes, 50), percentile(directRes, 99)
	rP50, rP99 := percentile(directRet, 50), percentile(directRet, 99)
	hP50, hP99 := percentile(httpRes, 50), percentile(httpRes, 99)
	pP50, pP99 := percentile(diffs, 50), percentile(diffs, 99)
	b.ReportMetric(dP50, "direct-p50-ms")
	b.ReportMetric(dP99, "direct-p99-ms")
	b.ReportMetric(rP50, "direct-return-p50-ms")
	b.ReportMetric(rP99, "direct-return-p99-ms")
	b.ReportMetric(hP50, "http-p50-ms")
	b.ReportMetric(hP99, "http-p99-ms")
	b.ReportMetric(hP50-dP50, "added-p50-ms")
	b.ReportMetric(hP99-dP99, "added-p99-ms")
	b.ReportMetric(pP50, "paired-diff-p50-ms")
	b.ReportMetric(pP99, "paired-diff-p99-ms")
	b.Logf("%d turns per arm, interleaved; one session per arm; the same engine, codex app-server and stub model", len(directRes))
	b.Logf("direct Engine.Turn to result:  p50 %.3f ms  p99 %.3f ms", dP50, dP99)
	b.Logf("direct Engine.Turn to return:  p50 %.3f ms  p99 %.3f ms", rP50, rP99)
	b.Logf("HTTPS + SSE to result:         p50 %.3f ms  p99 %.3f ms", hP50, hP99)
	b.Logf("added (http - direct):         p50 %.3f ms  p99 %.3f ms (difference of the arms' percentiles)", hP50-dP50, hP99-dP99)
	b.Logf("paired per-turn difference:    p50 %.3f ms  p99 %.3f ms", pP50, pP99)
}
