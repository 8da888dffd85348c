#!/usr/bin/env bash
# down-test.sh checks, without a cluster, that `down` changes only what `up`
# made. Each case runs the scripts' own functions in a network namespace of its
# own, which stands in for the host or for the cluster's namespace, and a
# temporary directory stands in for the host's paths. Each attack runs beside
# its control:
#
#   host-network-left-alone   the cluster's namespace is gone, so `down` sees
#                             the host: a KUBE-*/CNI-* chain, a bridge named
#                             like ours, a route to the service range,
#                             ip_forward and an empty nftables table stay.
#   cluster-network-removed   (control) in the namespace `up` recorded, the
#                             bridge, route, chains and table go and
#                             ip_forward is restored.
#   foreign-file-kept         a directory the node made holds a file of
#                             someone else's: the file and its directories stay.
#   node-paths-removed        (control) without it, everything the node made
#                             outside the state directory goes.
#   containing-route-refused  preflight refuses a route that contains the
#                             service range (10.0.0.0/8).
#   empty-namespace-passes    (control) preflight passes in a fresh namespace.
#   old-record-paths-removed  a record that lists only the top directories
#                             (an older script's) still has everything the
#                             node made below them removed.
#   other-node-refused        preflight refuses while kubelet's cgroup root
#                             exists (another checkout's node runs: each would
#                             record the other's sysctls as the machine's);
#                             (control) it passes without it.
#   caller-lock-released      a component started under
#                             `flock LOCK hack/local-cluster.sh up` does not
#                             keep LOCK once the command ends; (control) the
#                             command holds it while it runs.
#
# Usage: hack/local-cluster/down-test.sh (as root; iproute2, iptables, nft)
# hack/local-cluster/teardown-check.sh runs it first.
set -euo pipefail
shopt -s inherit_errexit

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ ${EUID} -eq 0 ]] || { echo "down-test: run as root (it makes network namespaces)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "${work}"' EXIT
failed=()

# in_netns NAME SCRIPT: run SCRIPT in a new network namespace with the
# scripts' functions loaded, the cluster's addresses set and STATE_DIR a
# directory of its own. Exit 0 is a pass.
in_netns() {
  local name="$1" script="$2" dir="${work}/$1"
  mkdir -p "${dir}"
  if unshare --net bash -c '
    set -euo pipefail
    shopt -s inherit_errexit
    HACK_DIR="$1" STATE_DIR="$2"
    log() { echo "  $*" >&2; }
    die() { log "error: $*"; exit 1; }
    source "${HACK_DIR}/local-cluster/machine.sh"
    source "${HACK_DIR}/local-cluster/network.sh"
    source "${HACK_DIR}/local-cluster/preflight.sh"
    source "${HACK_DIR}/local-cluster/node-config.sh"
    source "${HACK_DIR}/local-cluster/node.sh"
    BRIDGE=harness0 POD_CIDR=10.244.0.0/24 GATEWAY_IP=10.244.0.1 SERVICE_CIDR=10.0.0.0/24
    ip link set lo up
    # record_elsewhere writes the record as `up` does, in a namespace of its
    # own (the cluster'"'"'s, gone by the time down runs).
    record_elsewhere() { unshare --net bash -c "$(declare -f machine_record node_sysctls die log); $(declare -p NODE_SYSCTLS NODE_PATHS NODE_FILES MACHINE_DIR); machine_record"; }
    # net_sysctls_only keeps the record to the namespace'"'"'s own sysctls:
    # the machine-wide ones are not the test'"'"'s to write.
    net_sysctls_only() { grep "^net\." "${MACHINE_DIR}/sysctls" >"${MACHINE_DIR}/s" || true; mv "${MACHINE_DIR}/s" "${MACHINE_DIR}/sysctls"; }
    # A check runs in a subshell: a function that dies ends only the check.
    check() { ("$@") >/dev/null 2>&1 || { log "FAILED: $*"; exit 1; }; }
    check_not() { ! ("$@") >/dev/null 2>&1 || { log "FAILED: not $*"; exit 1; }; }
    eval "$3"
  ' down-test "${HACK_DIR}" "${dir}/state" "${script}"; then
    echo "down-test: PASS ${name}" >&2
  else
    echo "down-test: FAIL ${name}" >&2
    failed+=("${name}")
  fi
}

in_netns host-network-left-alone '
  mkdir -p "${STATE_DIR}"
  record_elsewhere
  net_sysctls_only
  # The host: another runtime'"'"'s chains, bridge and route, forwarding on.
  iptables -w -N KUBE-FOREIGN
  iptables -w -A FORWARD -j KUBE-FOREIGN
  iptables -w -t nat -N CNI-FOREIGN
  ip link add harness0 type bridge
  ip link set harness0 up
  ip route add 10.0.0.0/24 dev harness0
  sysctl -qw net.ipv4.ip_forward=1
  nft add table ip foreign
  network_teardown
  machine_restore
  check iptables -w -S KUBE-FOREIGN
  check grep -q -- "-A FORWARD -j KUBE-FOREIGN" <<<"$(iptables -w -S FORWARD)"
  check iptables -w -t nat -S CNI-FOREIGN
  check ip link show harness0
  check grep -q harness0 <<<"$(ip route show 10.0.0.0/24)"
  check test "$(sysctl -n net.ipv4.ip_forward)" = 1
  check nft list table ip foreign
'

in_netns cluster-network-removed '
  mkdir -p "${STATE_DIR}"
  machine_record
  net_sysctls_only
  # What up and the node make in the cluster'"'"'s namespace.
  network_up
  iptables -w -t nat -N KUBE-SERVICES
  iptables -w -t nat -A PREROUTING -j KUBE-SERVICES
  iptables -w -N CNI-FORWARD
  sysctl -qw net.ipv4.ip_forward=1
  network_teardown
  machine_restore
  check_not ip link show harness0
  check test -z "$(ip route show 10.0.0.0/24)"
  check_not grep -qE "^:(KUBE|CNI|HARNESS)-" <<<"$(iptables-save)"
  check test "$(sysctl -n net.ipv4.ip_forward)" = 0
  check test -z "$(nft list tables)"
  check_not test -e "${MACHINE_DIR}"
'

# The node'"'"'s paths under a temporary root instead of the host'"'"'s.
node_paths='
  R="${STATE_DIR}/root"
  mkdir -p "${STATE_DIR}" "${R}/run" "${R}/var/lib"
  NODE_PATHS=("${R}/run/containerd" "${R}/run/containerd/s" "${R}/var/lib/kubelet" "${R}/var/lib/kubelet/device-plugins")
  NODE_FILES=("${R}/var/lib/kubelet/device-plugins/kubelet.sock")
  machine_record
  net_sysctls_only
  mkdir -p "${R}/run/containerd/s" "${R}/var/lib/kubelet/device-plugins"
  : >"${R}/var/lib/kubelet/device-plugins/kubelet.sock"
'

in_netns foreign-file-kept "${node_paths}"'
  # Something else starts using /var/lib/kubelet while the cluster runs.
  mkdir -p "${R}/var/lib/kubelet/pki"
  echo theirs >"${R}/var/lib/kubelet/pki/kubelet.crt"
  machine_restore
  check test "$(cat "${R}/var/lib/kubelet/pki/kubelet.crt")" = theirs
  check_not test -e "${R}/var/lib/kubelet/device-plugins"
  check_not test -e "${R}/run/containerd"
'

in_netns node-paths-removed "${node_paths}"'
  machine_restore
  check_not test -e "${R}/var/lib/kubelet"
  check_not test -e "${R}/run/containerd"
  check test -d "${R}/var/lib"
'

in_netns old-record-paths-removed "${node_paths}"'
  printf "%s\n" "${R}/run/containerd" "${R}/var/lib/kubelet" >"${MACHINE_DIR}/absent-paths"
  machine_restore
  check_not test -e "${R}/var/lib/kubelet"
  check_not test -e "${R}/run/containerd"
'

in_netns other-node-refused '
  # A cgroup root of the test'"'"'s own, never a real node'"'"'s.
  CGROUP_ROOT="/harness-local-cluster-down-test-$$"
  hier="$(awk '"'"'$3 == "cgroup" || $3 == "cgroup2" { print $2; exit }'"'"' /proc/mounts)"
  mkdir -p "${STATE_DIR}"
  check preflight
  mkdir "${hier}${CGROUP_ROOT}"
  trap '"'"'rmdir "${hier}${CGROUP_ROOT}"'"'"' EXIT
  check_not preflight
'

in_netns containing-route-refused '
  ip link add wide0 type bridge
  ip link set wide0 up
  ip route add 10.0.0.0/8 dev wide0
  check_not preflight_network
'

in_netns empty-namespace-passes '
  check preflight_network
'

# The lock of the command that starts a component, as with
# `flock LOCK hack/local-cluster.sh up`.
lock_case() {
  local dir="${work}/caller-lock-released" pid
  mkdir -p "${dir}/logs" "${dir}/pids"
  (
    # shellcheck source=../local-cluster.sh
    LOCAL_CLUSTER_DIR="${dir}" source "${HACK_DIR}/local-cluster.sh"
    LOG_DIR="${dir}/logs" PID_DIR="${dir}/pids"
    exec 7>"${dir}/lock"
    flock 7
    start sleeper /bin/sleep 300
    # Control: while the command runs, it holds the lock.
    if flock -n "${dir}/lock" true; then echo "  FAILED: the lock was free while its holder ran" >&2; exit 1; fi
  ) || return 1
  pid="$(cat "${dir}/pids/sleeper.pid")"
  if flock -n "${dir}/lock" true; then
    kill "${pid}"
    return 0
  fi
  echo "  FAILED: the started component (pid ${pid}) holds its caller's lock: fd $(ls -l "/proc/${pid}/fd" | awk -v f="${dir}/lock" '$NF == f { print $(NF - 2) }')" >&2
  kill "${pid}"
  return 1
}
if lock_case; then
  echo "down-test: PASS caller-lock-released" >&2
else
  echo "down-test: FAIL caller-lock-released" >&2
  failed+=(caller-lock-released)
fi

if ((${#failed[@]})); then
  echo "down-test: FAIL: ${failed[*]}" >&2
  exit 1
fi
echo "down-test: PASS" >&2
