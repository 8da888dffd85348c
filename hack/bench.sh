#!/usr/bin/env bash
# bench.sh is `make bench`: every benchmark with a goal, one after another
# (they would measure each other if run at once), then docs/benchmarks.md
# and its plots (hack/benchreport). Each section's output is kept in
# BENCH_OUT (default bin/bench) as <section>.txt, replacing an earlier
# run's, and benchmarks that have series to plot write them there
# as JSON. Arguments, when given, pick the sections to run (by name);
# the report is written from whatever BENCH_OUT then holds.
#
# Needs what `make test` needs (KUBEBUILDER_ASSETS, CODEX_BIN: the Makefile
# exports them) and PostgreSQL for the store section (hack/setup-postgres.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

mkdir -p "${BENCH_OUT:=bin/bench}"
# absolute: the benchmarks run in their packages' directories
BENCH_OUT="$(cd "${BENCH_OUT}" && pwd)"
export BENCH_OUT

# SECTIONS: name|command. Each command is `go test -bench` with -run '^$',
# so no test runs with it.
SECTIONS=(
  "selection|go test -run '^\$' -bench 'BenchmarkSelect|BenchmarkPolicyConflicts' -benchmem -count=1 ./internal/policy/selection/ \
    && go test -run '^\$' -bench 'BenchmarkTurnSelection' -benchmem -count=1 ./internal/dispatcher/engine/ \
    && if [[ -x hack/bench-instructions.sh ]]; then hack/bench-instructions.sh ./internal/policy/selection/ '^BenchmarkSelect\$' \
         || echo 'bench: BenchmarkSelect instructions not counted (hack/bench-instructions.sh failed)'; \
       else echo 'bench: hack/bench-instructions.sh absent: no instr/op'; fi"
  "engine|go test -run '^\$' -bench 'BenchmarkTurnStatusWrites\$' -benchtime 20x -count=1 ./internal/dispatcher/engine/"
  "journal|go test -run '^\$' -bench 'BenchmarkTurnFsyncs\$' -benchtime 200x -count=1 ./internal/dispatcher/store/journal/"
  "admission|go test -run '^\$' -bench 'BenchmarkAdmission\$' -benchtime 1000x -count=1 -timeout=30m ./test/scale/ \
    && hack/bench-profiles.sh \"\${BENCH_OUT}\" docs/benchmarks"
  "dispatcher|go test -v -run '^\$' -bench 'BenchmarkDispatcherProcess\$' -benchtime 1x -count=1 -timeout=30m ./internal/dispatcher/httpapi/ \
    && cp \"\${BENCH_OUT}/dispatcher-process.json\" docs/benchmarks/ \
    && go test -v -run '^\$' -bench 'BenchmarkDispatcherConcurrency\$' -benchtime 1x -count=1 -timeout=30m ./internal/dispatcher/httpapi/ \
    && hack/bench-profiles.sh \"\${BENCH_OUT}\" docs/benchmarks && cp \"\${BENCH_OUT}/dispatcher-concurrency.json\" docs/benchmarks/"
  "gateway|go test -v -run '^\$' -bench 'BenchmarkModelGateway\$' -benchtime 1x -count=1 -timeout=20m ./cmd/dispatcher/ \
    && env -u BENCH_OUT go test -v -run '^\$' -bench 'BenchmarkDispatcherProcess\$' -benchtime 1x -count=1 -timeout=30m ./internal/dispatcher/httpapi/"
  "scale|go test -run '^\$' -bench 'BenchmarkOperatorScale' -benchtime 1x -count=1 -timeout=60m ./test/scale/ \
    && hack/bench-profiles.sh \"\${BENCH_OUT}\" docs/benchmarks"
  "store|POSTGRES_DIR=\"\$(hack/setup-postgres.sh)\" go test -tags postgres -run '^\$' -bench 'BenchmarkTurnOverhead' -benchtime 3s -count=1 ./internal/dispatcher/store/pgstore/"
)

picked() {
  [[ $# -eq 1 ]] && return 0
  local name="$1" a
  shift
  for a in "$@"; do [[ "${a}" == "${name}" ]] && return 0; done
  return 1
}

failed=0
for entry in "${SECTIONS[@]}"; do
  name="${entry%%|*}"
  cmd="${entry#*|}"
  picked "${name}" "$@" || continue
  out="${BENCH_OUT}/${name}.txt"
  echo "bench: ${name}: ${cmd}" >&2
  start="$(date +%s)"
  {
    echo "# command: ${cmd}"
    echo "# started: $(date -u +%Y-%m-%dT%H:%MZ)"
  } >"${out}.head"
  set +e
  bash -c "${cmd}" >"${out}.body" 2>&1
  rc=$?
  set -e
  { cat "${out}.head"; echo "# seconds: $(( $(date +%s) - start ))"; cat "${out}.body"; } >"${out}"
  rm -f "${out}.head" "${out}.body"
  grep -E '^(Benchmark|ok|FAIL|PASS)' "${out}" >&2 || true
  if [[ ${rc} -ne 0 ]]; then
    echo "bench: ${name} failed (exit ${rc}); its output: ${out}" >&2
    failed=1
  fi
done

go run ./hack/benchreport -in "${BENCH_OUT}" -docs docs
echo "bench: docs/benchmarks.md and docs/benchmarks/*.png written from ${BENCH_OUT}" >&2
exit "${failed}"
