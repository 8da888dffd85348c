#!/usr/bin/env bash
# bench-instructions.sh PACKAGE REGEXP [LOW HIGH] prints the instructions
# one iteration of each benchmark of PACKAGE that matches REGEXP executes,
# counted by valgrind's callgrind, as Go benchmark lines:
#
#   BenchmarkSelect 1000 61234 instr/op
#
# Wall-clock time on a shared machine varies by tens of percent; an
# instruction count does not depend on the load, so it is the figure to
# compare before and after a change. Each benchmark runs twice under
# callgrind, LOW and HIGH iterations (default 200 and 1200), and the figure
# is the difference of the two totals divided by HIGH-LOW: building the test
# binary's state, the benchmark's setup and the process's start and exit
# cancel out. The second field is HIGH-LOW, the iterations the figure is
# the mean of. Everything the process executes is counted, on one P
# (GOMAXPROCS=1) so that the runtime's scheduling does not vary between the
# two runs.
#
# The garbage collector is off (GOGC=off) unless GOGC is set: it paces its
# work by the clock, so the number of collections, and the write barriers
# that run while one marks, vary with the load by several percent of the
# figure. Allocating is counted; collecting is not, so compare B/op and
# allocs/op (the ordinary benchmark run) as well. Asynchronous preemption is
# off (GODEBUG=asyncpreemptoff=1): its signals come at times that depend on
# the load, and callgrind 3.19 can abort on a signal that arrives while it
# handles another. The binary is built without cgo for the same reason (no
# C threads). The runtime reads the clock with RDTSCP when the CPU has it,
# an instruction callgrind 3.19 does not know: GODEBUG cpu.rdtscp=off makes
# it use RDTSC.
#
# Needs valgrind (apt-get install valgrind) and Go. Slow benchmarks can
# take smaller counts: callgrind runs code about 50 times slower.
set -euo pipefail

usage() {
  echo "usage: $0 PACKAGE BENCHMARK-REGEXP [LOW HIGH]" >&2
  echo "  e.g. $0 ./internal/policy/selection/ '^BenchmarkSelect\$' 200 1200" >&2
  exit 2
}
[[ $# -eq 2 || $# -eq 4 ]] || usage
pkg="$1" re="$2" low="${3:-200}" high="${4:-1200}"
[[ "${low}" =~ ^[0-9]+$ && "${high}" =~ ^[0-9]+$ && "${high}" -gt "${low}" && "${low}" -gt 0 ]] || {
  echo "$0: LOW and HIGH must be whole numbers with 0 < LOW < HIGH (got '${low}' and '${high}')" >&2
  exit 2
}

if ! command -v valgrind >/dev/null 2>&1; then
  echo "$0: valgrind is not installed or not on PATH; it counts the instructions (its callgrind tool). Install it, e.g. apt-get install valgrind." >&2
  exit 1
fi
if ! command -v go >/dev/null 2>&1; then
  echo "$0: go is not on PATH; it builds the package's test binary." >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# The test binary runs in its package's directory, as `go test` runs it.
dir="$(go list -f '{{.Dir}}' "${pkg}")"
CGO_ENABLED=0 go test -c -o "${tmp}/bench.test" "${pkg}"
[[ -x "${tmp}/bench.test" ]] || {
  echo "$0: ${pkg} has no test files: no benchmark to count" >&2
  exit 1
}

# run N ANCHORED-REGEXP runs the benchmark N times under callgrind and
# prints the total instructions of the whole process.
run() {
  local n="$1" anchored="$2" out="${tmp}/callgrind.out" log="${tmp}/bench.log"
  rm -f "${out}"
  if ! (cd "${dir}" && GOGC="${GOGC:-off}" GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --callgrind-out-file="${out}" \
    "${tmp}/bench.test" -test.run '^$' -test.bench "${anchored}" -test.benchtime="${n}x") >"${log}" 2>&1; then
    echo "$0: the benchmark failed under callgrind:" >&2
    cat "${log}" >&2
    exit 1
  fi
  # The benchmark must have run exactly n times, or the difference means nothing.
  if ! awk -v name="${name}" -v n="${n}" '$1 == name && $2 == n { found = 1 } END { exit !found }' "${log}"; then
    echo "$0: ${name} did not report ${n} iterations (skipped or failed?):" >&2
    cat "${log}" >&2
    exit 1
  fi
  # callgrind writes the total of every thread as "summary:" (older
  # releases) or "totals:".
  local total
  total="$(awk '/^(summary|totals):/ { print $2; exit }' "${out}")"
  [[ -n "${total}" ]] || {
    echo "$0: no instruction total in callgrind's output ${out}" >&2
    exit 1
  }
  echo "${total}"
}

# The benchmarks REGEXP matches, each by its full name (GOMAXPROCS=1: no
# -N suffix), found by running each once natively.
if ! (cd "${dir}" && GOMAXPROCS=1 "${tmp}/bench.test" -test.run '^$' -test.bench "${re}" -test.benchtime=1x) >"${tmp}/list.log" 2>&1; then
  echo "$0: the benchmarks failed:" >&2
  cat "${tmp}/list.log" >&2
  exit 1
fi
mapfile -t names < <(awk '/^Benchmark/ && NF >= 4 && $2 ~ /^[0-9]+$/ { print $1 }' "${tmp}/list.log")
if [[ ${#names[@]} -eq 0 ]]; then
  echo "$0: no benchmark of ${pkg} matches '${re}'" >&2
  exit 1
fi

for name in "${names[@]}"; do
  # Anchor each level of the name (testing matches -bench per level,
  # split at '/'), with regexp metacharacters escaped, so that only this
  # benchmark runs.
  anchored=""
  IFS=/ read -r -a levels <<<"${name}"
  for level in "${levels[@]}"; do
    escaped="$(printf '%s' "${level}" | sed 's/[][\\.*^$+?(){}|]/\\&/g')"
    anchored+="${anchored:+/}^${escaped}\$"
  done
  lo="$(run "${low}" "${anchored}")"
  hi="$(run "${high}" "${anchored}")"
  echo "# ${name}: ${lo} instructions at ${low}x, ${hi} at ${high}x" >&2
  awk -v name="${name}" -v lo="${lo}" -v hi="${hi}" -v n="$((high - low))" \
    'BEGIN { printf "%s %d %.0f instr/op\n", name, n, (hi - lo) / n }'
done
