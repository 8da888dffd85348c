#!/usr/bin/env bash
# test-e2e.sh is `make test-e2e` after its builds: the chart tests and the
# system suite on the local cluster with its real node, then the proof that
# the cluster leaves the machine as it found it:
#
#   1. snapshot the machine (hack/local-cluster.sh snapshot);
#   2. the real-OpenClaw test (./test/openclaw/...), on a system of its own:
#      `make run`'s (hack/devcluster on loopback), before the cluster, so
#      the two never compete for the machine; then the PostgreSQL store's
#      suites (make test-postgres: a real PostgreSQL per package, as nobody,
#      on loopback), inside the snapshots so a server left behind fails;
#      then the fault campaign on processes (make test-faults, reduced);
#   3. up, run ./test/e2e/..., down (down also runs when anything fails);
#   4. snapshot again and diff: any difference fails the run;
#   5. hack/local-cluster/teardown-check.sh: up, a Pod, SIGKILL every cluster
#      process (a killed test run), down, and the same diff.
#
# Needs root, the images of `make images` (LOCAL_CLUSTER_IMAGES_DIR) and the
# environment the Makefile passes: HELM_BIN, CODEX_BIN, CODEX_BIN_BELOW_FLOOR,
# E2E_BIN_DIR, KUBEBUILDER_ASSETS, OPENCLAW_TOOLS, POSTGRES_DIR. GO_TEST_FLAGS
# are go test's flags; ISOLATED is the command that runs a suite in a network
# namespace of its own (the Makefile's; hack/isolated).
set -euo pipefail
shopt -s inherit_errexit

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ISOLATED="${ISOLATED:-go run ${HACK_DIR}/isolated --}"
# ISOLATED_HERE runs the guard and cleans the environment where it is (the
# cluster's namespace) instead of making a namespace.
ISOLATED_HERE="go run ${HACK_DIR}/isolated -here --"
CLUSTER="${HACK_DIR}/local-cluster.sh"
STEP="${HACK_DIR}/ci/step"
IMAGES_DIR="${LOCAL_CLUSTER_IMAGES_DIR:-$(cd "${HACK_DIR}/.." && pwd)/.local/images}"

log() { echo "test-e2e: $*" >&2; }

# test_reports prints, from go test -v output on stdin, what says why a test
# failed: the summary lines, panics, and every line a test reported
# ("    file.go:12: ...", from any file) with its continuation lines.
test_reports() {
  awk '
    /^(--- FAIL|FAIL|panic:|ok )/ { print; cont = 0; next }
    /^ +[^ ]+\.go:[0-9]+: / { print; cont = 1; next }
    cont && /^        / { print; next }
    { cont = 0 }'
}

snapshots="$(mktemp -d)"
"${CLUSTER}" snapshot >"${snapshots}/before"

# down runs once, whatever happened; a failed down fails the run.
down_done=0
down() {
  [[ "${down_done}" == 1 ]] && return 0
  down_done=1
  "${STEP}" cluster-down "${CLUSTER}" down
}
trap 'down || true' EXIT

# shellcheck disable=SC2086 # GO_TEST_FLAGS are words
"${STEP}" openclaw ${ISOLATED} go test -tags e2e ${GO_TEST_FLAGS:--count=1} ./test/openclaw/...
# shellcheck disable=SC2086 # GO_TEST_FLAGS are words
"${STEP}" postgres ${ISOLATED} env CGO_ENABLED=1 go test -race -tags postgres ${GO_TEST_FLAGS:--count=1} ./internal/pgstore/... ./internal/testutil/pgtest/...
# The dispatcher's own PostgreSQL test only: make test already ran the rest of the package.
# shellcheck disable=SC2086 # GO_TEST_FLAGS are words
"${STEP}" dispatcher-postgres ${ISOLATED} env CGO_ENABLED=1 go test -race -tags postgres ${GO_TEST_FLAGS:--count=1} -run 'OnPostgres$' ./cmd/dispatcher/
# The fault campaign on processes (make test-faults), reduced to one
# injection of each fault (the full campaign, 4 of each and every phase hit
# at least 3 times, is make test-faults): about two minutes.
# Its verbose log is long: a passing run shows its tests and its table; a
# failing one also every line a test reported, from whichever file.
campaign_log="$(mktemp)"
# shellcheck disable=SC2086 # GO_TEST_FLAGS are words
if ! FAULT_INJECTIONS=1 "${STEP}" fault-campaign ${ISOLATED} go test -tags faults ${GO_TEST_FLAGS:--count=1} -v -run 'FaultCampaign$' ./cmd/dispatcher/ >"${campaign_log}" 2>&1; then
  test_reports <"${campaign_log}"
  log "the fault campaign failed (its reports above; its whole output is ${campaign_log})"
  exit 1
fi
grep -E '^(=== RUN|--- |PASS|FAIL|ok )|faults_[a-z]*_test' "${campaign_log}" || true
rm -f "${campaign_log}"

"${STEP}" cluster-up "${CLUSTER}" up
eval "$("${CLUSTER}" env)"
# The suite runs in the cluster's network namespace (its addresses exist only
# there), after the guard has proven that namespace has no way off the machine.
# shellcheck disable=SC2086 # GO_TEST_FLAGS are words
E2E_IMAGES_ENV="${IMAGES_DIR}/images.env" "${STEP}" e2e "${CLUSTER}" exec ${ISOLATED_HERE} go test -tags e2e ${GO_TEST_FLAGS:--count=1} ./test/e2e/...
down

"${CLUSTER}" snapshot >"${snapshots}/after"
if ! diff -u "${snapshots}/before" "${snapshots}/after"; then
  log "error: the machine differs after down from before up (diff above; snapshots in ${snapshots})"
  exit 1
fi
log "the machine after down equals the machine before up"
rm -rf "${snapshots}"

"${STEP}" teardown-check "${HACK_DIR}/local-cluster/teardown-check.sh"
