#!/usr/bin/env bash
# count-tests.sh prints, for every package of the Go suites and each build
# tag they run with, how many top-level tests (go test -list) and Ginkgo
# specs (a dry run, which runs no spec) it has, as "tags<TAB>package<TAB>
# tests<TAB>specs", then the totals. Subtests and table rows are not
# counted. Run it at two commits and diff the outputs to show that a change
# dropped no test.
#
# It runs the test binaries (to list them), so it needs what their TestMain
# needs: KUBEBUILDER_ASSETS, and POSTGRES_DIR for the postgres tag.
set -euo pipefail
cd "$(dirname "$0")/../.."

# count TAGS PACKAGE...: one line per package.
count() {
  local tags="$1" pkg tests specs suites
  shift
  for pkg in $(go list -tags "${tags}" "$@"); do
    # A package whose binary cannot list (its TestMain failed) shows "?".
    tests="$(go test -tags "${tags}" -vet=off -count=1 -list '.*' "${pkg}" 2>/dev/null |
      awk '/^(Test|Example|Fuzz)/ { n++ } /^(ok |\?)/ { ok = 1 } END { print (ok ? n + 0 : "?") }' || true)"
    specs=0
    # The suites: the tests of the files that call RunSpecs.
    suites="$(grep -lE 'RunSpecs\(' "$(go list -tags "${tags}" -f '{{.Dir}}' "${pkg}")"/*_test.go 2>/dev/null |
      xargs -r sed -nE 's/^func (Test[A-Za-z0-9_]*)\(.*/\1/p' | paste -sd'|' || true)"
    if [[ -n "${suites}" ]]; then
      specs="$(go test -v -tags "${tags}" -vet=off -count=1 -run "^(${suites})\$" "${pkg}" -args -ginkgo.dry-run -ginkgo.no-color 2>/dev/null |
        awk '/^Ran [0-9]+ of [0-9]+ Specs/ { n += $2; found = 1 } END { print (found ? n : "?") }' || true)"
    fi
    printf '%s\t%s\t%s\t%s\n' "${tags:-none}" "${pkg#github.com/openclaw/harness-operator/}" "${tests}" "${specs}"
  done
}

{
  count "" ./...
  count postgres ./internal/dispatcher/store/pgstore/... ./internal/testutil/pgtest/... ./cmd/dispatcher/ ./test/faults/
  count faults ./test/faults/
  count e2e ./test/openclaw/... ./test/e2e/...
} | tee "${COUNT_TESTS_ROWS:-/dev/stderr}" | awk -F'\t' '{ t += $3; s += $4 } END { printf "total\t\t%d\t%d\n", t, s }'
