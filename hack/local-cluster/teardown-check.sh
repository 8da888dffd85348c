#!/usr/bin/env bash
# teardown-check.sh proves that `hack/local-cluster.sh down` puts the machine
# back as it was, even when every process of the cluster was SIGKILLed (as
# after a killed test run): snapshot; up; a Pod running on the real node (so
# there are containers, mounts, a veth, a network namespace and the sysctls the
# CNI plugin sets); SIGKILL every cluster process at once; down; snapshot;
# diff. Exits 1 and prints the diff when the snapshots differ. It runs
# down-test.sh first.
#
# Usage: hack/local-cluster/teardown-check.sh [--graceful]
#   --graceful  skip the SIGKILL: check a plain up/down cycle
# Needs a stopped cluster, root, and the images of `make images` (or
# LOCAL_CLUSTER_IMAGES_DIR).
set -euo pipefail
shopt -s inherit_errexit

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTER="${HACK_DIR}/local-cluster.sh"
SNAPSHOT="${HACK_DIR}/local-cluster/snapshot.sh"
STATE_DIR="${LOCAL_CLUSTER_DIR:-$(cd "${HACK_DIR}/.." && pwd)/.local/cluster}"
# shellcheck source=/dev/null
source "${HACK_DIR}/local-cluster/node-config.sh" # CGROUP_ROOT, CONTAINERD_SOCK

log() { echo "teardown-check: $*" >&2; }
die() { log "error: $*"; exit 1; }

graceful=0
case "${1:-}" in
  "") ;;
  --graceful) graceful=1 ;;
  *) die "usage: $0 [--graceful]" ;;
esac

# cluster_pids prints every process of the cluster: the components (PID
# files), the containerd shims, and everything in the node's cgroups.
cluster_pids() {
  cat "${STATE_DIR}"/pids/*.pid 2>/dev/null || true
  pgrep -f -- "-address ${CONTAINERD_SOCK}" || true
  find /sys/fs/cgroup -path "*${CGROUP_ROOT}/*" -name cgroup.procs -exec cat {} + 2>/dev/null || true
}

run_pod() {
  local pause
  pause="$(sed -n 's/^PAUSE_IMAGE=//p' "${LOCAL_CLUSTER_IMAGES_DIR}/images.env" | tr -d '"'"'")"
  "${CLUSTER}" exec "${KUBECTL}" apply -f - >&2 <<YAML
apiVersion: v1
kind: Pod
metadata: {name: teardown-check, namespace: default}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 65532, seccompProfile: {type: RuntimeDefault}}
  containers:
  - name: pause
    image: ${pause}
    imagePullPolicy: Never
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
YAML
  "${CLUSTER}" exec "${KUBECTL}" wait --for=condition=Ready pod/teardown-check --timeout=60s >&2
  "${CLUSTER}" exec "${KUBECTL}" get pod teardown-check -o wide >&2
}

main() {
  [[ ${EUID} -eq 0 ]] || die "run as root"
  # First the cases a real cycle cannot show: down in a namespace that is not
  # the cluster's, a foreign file in a directory the node made, an
  # overlapping route (no cluster needed).
  "${HACK_DIR}/local-cluster/down-test.sh"
  if [[ -n "$(cluster_pids)" ]]; then
    die "a cluster is running in ${STATE_DIR}; run hack/local-cluster.sh down first"
  fi
  # Installing packages and building binaries are not part of the cycle.
  "${CLUSTER}" build >/dev/null
  local work
  work="$(mktemp -d)"
  "${SNAPSHOT}" >"${work}/before"
  "${CLUSTER}" up
  eval "$("${CLUSTER}" env)"
  run_pod
  if ((graceful == 0)); then
    local pids
    pids="$(cluster_pids | sort -u | tr '\n' ' ')"
    log "SIGKILL to every cluster process: ${pids}"
    # shellcheck disable=SC2086 # a list of PIDs
    kill -KILL ${pids} 2>/dev/null || true
  fi
  "${CLUSTER}" down
  "${SNAPSHOT}" >"${work}/after"
  if ! diff -u "${work}/before" "${work}/after"; then
    log "FAIL: the machine differs after down (snapshots in ${work})"
    exit 1
  fi
  rm -rf "${work}"
  log "PASS: the machine after down equals the machine before up"
}

main
