#!/usr/bin/env bash
# test-e2e.sh is `make test-e2e` after its checks: the chart tests and the
# system suite on the local cluster with its real node, the suites on their
# own systems, then the proof that the cluster leaves the machine as it found
# it:
#
#   1. snapshot the machine (hack/local-cluster.sh snapshot);
#   2. the fault campaign on processes (make test-faults, reduced to
#      E2E_FAULT_INJECTIONS of each fault), alone: its load keeps both cores
#      busy;
#   3. three lanes side by side, which share nothing but the CPU (each has
#      its own network namespaces and state, and each spends much of its
#      time waiting on processes and Pods to start):
#      - the OpenClaw lane: make test-openclaw-system, the real-OpenClaw
#        test on a system of its own, `make run`'s (hack/devcluster on
#        loopback);
#      - the plugin and PostgreSQL lane: make test-openclaw (the plugin's
#        own tests), then make test-postgres (a real PostgreSQL per package,
#        as nobody, on loopback);
#      - the cluster lane: make binaries images, up, make test-e2e-system,
#        down (down also runs when anything fails), then
#        hack/local-cluster/teardown-check.sh: up, a Pod, SIGKILL every
#        cluster process (a killed test run), down, and a diff of snapshots
#        around it;
#   4. snapshot again, once every lane has ended, and diff: anything left
#      behind (a server, a mount, a rule) fails the run.
#
# Every suite is a Makefile target: the Makefile is the one definition of
# each command; this script orders them. Needs root, and from the Makefile
# IMAGES_DIR and LOCAL_CLUSTER_IMAGES_DIR (where make images writes) and
# E2E_FAULT_INJECTIONS.
set -euo pipefail
shopt -s inherit_errexit

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HACK_DIR}/.." && pwd)"
CLUSTER="${HACK_DIR}/local-cluster.sh"
STEP="${HACK_DIR}/ci/step"
IMAGES_DIR="${IMAGES_DIR:-${ROOT}/.local/images}"
make_() { make -C "${ROOT}" --no-print-directory "$@"; }

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

# The fault campaign, reduced to E2E_FAULT_INJECTIONS of each fault (the
# full campaign, where every phase must be hit too, is make test-faults).
# Its verbose log is long: a passing run shows its tests and its table; a
# failing one also every line a test reported, from whichever file.
campaign_log="$(mktemp)"
if ! FAULT_INJECTIONS="${E2E_FAULT_INJECTIONS:?from the Makefile}" make_ test-faults >"${campaign_log}" 2>&1; then
  test_reports <"${campaign_log}"
  log "the fault campaign failed (its reports above; its whole output is ${campaign_log})"
  exit 1
fi
grep -E '^(=== RUN|--- |PASS|FAIL|ok )|faults_[a-z]*_test' "${campaign_log}" || true
rm -f "${campaign_log}"

# The lanes that run in the background (step 3): each in a process group
# of its own, so that a failing run stops it; a lane's output is printed
# when it ends.
openclaw_lane() { make_ test-openclaw-system; }
# The suite above builds a copy of the plugin, so the plugin's own tests,
# which build in clients/openclaw, run here, beside it.
plugin_postgres_lane() { make_ test-openclaw test-postgres; }
declare -A lane_pid=() lane_log=() lane_title=(
  [openclaw]="the OpenClaw lane (make test-openclaw-system)"
  [plugin_postgres]="the plugin and PostgreSQL lane (make test-openclaw test-postgres)"
)
start_lane() {
  lane_log[$1]="$(mktemp)"
  set -m
  "$1_lane" >"${lane_log[$1]}" 2>&1 &
  lane_pid[$1]=$!
  set +m
}
# wait_lane waits for a lane and prints its output; its exit code is the
# lane's.
wait_lane() {
  local rc=0
  [[ -n "${lane_pid[$1]:-}" ]] || return 0
  wait "${lane_pid[$1]}" || rc=$?
  unset "lane_pid[$1]"
  echo "== ${lane_title[$1]}"
  cat "${lane_log[$1]}"
  rm -f "${lane_log[$1]}"
  return "${rc}"
}
start_lane openclaw
start_lane plugin_postgres

# down runs once, whatever happened; a failed down fails the run.
down_done=0
down() {
  [[ "${down_done}" == 1 ]] && return 0
  down_done=1
  "${STEP}" cluster-down "${CLUSTER}" down
}
# cleanup stops the lanes still running when the run failed first (and
# prints what they had done), and takes the cluster down.
cleanup() {
  local lane
  for lane in "${!lane_pid[@]}"; do
    kill -- -"${lane_pid[${lane}]}" 2>/dev/null || true
    wait_lane "${lane}" || true
  done
  down || true
}
trap cleanup EXIT

# The cluster lane (step 3), in the foreground: the binaries and images it
# alone needs, up, the suite, down.
make_ binaries images IMAGES_DIR="${IMAGES_DIR}"
"${STEP}" cluster-up "${CLUSTER}" up
make_ test-e2e-system IMAGES_DIR="${IMAGES_DIR}"
down
# The teardown check, still in the cluster lane: nothing of the other lanes
# shows in its snapshots (their processes belong to this run, their network
# namespaces are not pinned, they mount nothing).
"${STEP}" teardown-check "${HACK_DIR}/local-cluster/teardown-check.sh"
for lane in plugin_postgres openclaw; do
  if ! wait_lane "${lane}"; then
    log "${lane_title[${lane}]} failed (its output above)"
    exit 1
  fi
done

"${CLUSTER}" snapshot >"${snapshots}/after"
if ! diff -u "${snapshots}/before" "${snapshots}/after"; then
  log "error: the machine differs after the suites from before them (diff above; snapshots in ${snapshots})"
  exit 1
fi
log "the machine after the suites equals the machine before them"
rm -rf "${snapshots}"
