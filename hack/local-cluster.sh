#!/usr/bin/env bash
# local-cluster.sh runs the local Kubernetes cluster of the e2e suite: real
# etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from
# the Go module proxy (through hack/setup-envtest.sh); one real node (containerd,
# runc, the CNI bridge from Debian; kubelet and kube-proxy built like the rest)
# that runs the images of `make images`, and enforces NetworkPolicy with
# kube-router's firewall; and KWOK, which plays the kubelet of one fake,
# tainted Node for tests that need many simulated Pods.
# See hack/local-cluster/README.md.
#
# Usage: hack/local-cluster.sh build|up|down [--keep]|status|env|exec CMD...|snapshot
#
# The cluster lives in a network namespace of its own, pinned at
# <state dir>/netns: every cluster process runs there, and so must every
# client of the cluster (`exec`, or nsenter --net=<pin>). The bridge, its
# routes, the iptables/nft chains and ip_forward then never touch the host,
# and with no link to the host nothing sent to the cluster's addresses can
# leave the machine.
#
# State lives in ${LOCAL_CLUSTER_DIR:-<repo>/.local/cluster}: pki/, kubeconfigs,
# pids/, logs/, etcd-data/, volumes/, kwok.yaml, node/ (containerd, kubelet, CNI),
# machine/ (what `down` restores). Every process is tracked by a PID file.
#
# Environment (all optional):
#   LOCAL_CLUSTER_DIR              state directory (default <repo>/.local/cluster)
#   LOCAL_CLUSTER_ETCD_PORT        etcd client port (default 22379)
#   LOCAL_CLUSTER_ETCD_PEER_PORT   etcd peer port (default 22380)
#   LOCAL_CLUSTER_APISERVER_PORT   kube-apiserver secure port (default 16443)
#   LOCAL_CLUSTER_KCM_PORT         kube-controller-manager secure port (default 20257)
#   LOCAL_CLUSTER_SCHEDULER_PORT   kube-scheduler secure port (default 20259)
#   LOCAL_CLUSTER_KWOK_PORT        kwok's own HTTP server (healthz) port (default 20247)
#   LOCAL_CLUSTER_KUBELET_PORT     kubelet's API port on the node IP (default 20250; healthz on
#                                  127.0.0.1 at it minus 2, kube-proxy's metrics at it minus 1)
#   LOCAL_CLUSTER_KUBE_PROXY_PORT  kube-proxy's healthz port on 127.0.0.1 (default 20256)
#   LOCAL_CLUSTER_KUBE_ROUTER_PORT kube-router's healthz port (default 20253)
#   LOCAL_CLUSTER_BRIDGE           the Pods' bridge (default harness0)
#   LOCAL_CLUSTER_IMAGES_DIR       image archives to import, with images.env (default <repo>/.local/images)
#   LOCAL_CLUSTER_TIMEOUT          seconds to wait for each component (default 90)
#   LOCAL_CLUSTER_GRACE            seconds between SIGTERM and SIGKILL on down (default 15)
#   KWOK_VERSION                   sigs.k8s.io/kwok release (hack/tool-versions.sh)
#   KUBE_ROUTER_VERSION            github.com/cloudnativelabs/kube-router/v2 release (hack/tool-versions.sh)
#   KWOK_BUILD                     shared (default: build kwok against the cluster's k8s.io
#                                  modules, reusing their compiled packages) or install
#   KWOK_NODE_LEASE_SECONDS        node lease duration kwok keeps; 0 = status heartbeats only (default 40)
#   KUBECTL                        kubectl to use (default: the machine's when its minor >= 30, else built)
#   K8S_VERSION, ETCD_VERSION, HELM_VERSION, HARNESS_CACHE_DIR  passed to hack/setup-envtest.sh
#                                  (the versions' defaults: hack/tool-versions.sh)
# shellcheck source-path=SCRIPTDIR
set -euo pipefail
# Failures inside $(...) must stop the script too (a failed build must not
# print an empty path).
shopt -s inherit_errexit

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "${HACK_DIR}/.." && pwd)"

# shellcheck source=tool-versions.sh
source "${HACK_DIR}/tool-versions.sh"
CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
# kwok is built in the module graph of setup-envtest.sh's tools (kwok.sh).
KWOK_BIN_DIR="${CACHE_ROOT}/kwok/${KWOK_VERSION}-${TOOLS_KEY}"
# kube-router is built in its own module graph (kube-router.sh).
KUBE_ROUTER_BIN_DIR="${CACHE_ROOT}/kube-router/${KUBE_ROUTER_VERSION}"
KUBECTL_MIN_MINOR=30

STATE_DIR="${LOCAL_CLUSTER_DIR:-${REPO_ROOT}/.local/cluster}"
PKI_DIR="${STATE_DIR}/pki"
PID_DIR="${STATE_DIR}/pids"
LOG_DIR="${STATE_DIR}/logs"
ETCD_DATA="${STATE_DIR}/etcd-data"
KUBECONFIG_FILE="${STATE_DIR}/kubeconfig"
# The network namespace's pin: a bind mount of the namespace on this file
# (unshare --net=FILE). Not `ip netns add`: that makes /run/netns a shared
# bind mount of itself that outlives the namespace, a change to the host's
# mounts that down could not tell from one that was there before.
NETNS_PIN="${STATE_DIR}/netns"
# hostPath PersistentVolumes of Pods on the real node belong here: `down`
# removes the directory (unless --keep), so their data never outlives the cluster.
VOLUMES_DIR="${STATE_DIR}/volumes"

ETCD_PORT="${LOCAL_CLUSTER_ETCD_PORT:-22379}"
ETCD_PEER_PORT="${LOCAL_CLUSTER_ETCD_PEER_PORT:-22380}"
APISERVER_PORT="${LOCAL_CLUSTER_APISERVER_PORT:-16443}"
KCM_PORT="${LOCAL_CLUSTER_KCM_PORT:-20257}"
SCHEDULER_PORT="${LOCAL_CLUSTER_SCHEDULER_PORT:-20259}"
KWOK_PORT="${LOCAL_CLUSTER_KWOK_PORT:-20247}"
TIMEOUT="${LOCAL_CLUSTER_TIMEOUT:-90}"
GRACE="${LOCAL_CLUSTER_GRACE:-15}"
KWOK_NODE_LEASE_SECONDS="${KWOK_NODE_LEASE_SECONDS:-40}"
KUBELET_PORT="${LOCAL_CLUSTER_KUBELET_PORT:-20250}"
KUBELET_HEALTHZ_PORT=$((KUBELET_PORT - 2))
KUBE_PROXY_HEALTHZ_PORT="${LOCAL_CLUSTER_KUBE_PROXY_PORT:-20256}"
KUBE_PROXY_METRICS_PORT=$((KUBELET_PORT - 1))
IMAGES_DIR="${LOCAL_CLUSTER_IMAGES_DIR:-${REPO_ROOT}/.local/images}"

# Service range, pod ranges and node IPs must not overlap.
# The real node: Pods get addresses from a private range behind the bridge,
# whose gateway address is also where the API server listens (for Pods and for
# every client on the host) and the node's own address (its InternalIP, where
# kubelet serves logs and exec). kubelet refuses a loopback node IP; the
# gateway address is just as local: nothing routes it off the machine.
BRIDGE="${LOCAL_CLUSTER_BRIDGE:-harness0}"
POD_CIDR=10.244.0.0/24
GATEWAY_IP=10.244.0.1
NODE_IP="${GATEWAY_IP}"
NODE_NAME=node-0
SERVICE_CIDR=10.0.0.0/24
SERVICE_IP=10.0.0.1

# The KWOK node: kwok hands out pod IPs itself, from the first address of
# KWOK_POD_CIDR. They are loopback addresses nothing listens on: the manager
# dials the pods of a managed harness (its handshake), and those dials are
# refused at once instead of leaving the machine.
KWOK_POD_CIDR=127.244.0.0/16
KWOK_NODE_IP=127.240.0.1
KWOK_NODE_NAME=kwok-node-0

COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok containerd kubelet kube-proxy kube-router)

# The admission chain a production cluster runs (the v1.37 default-on set plus
# NodeRestriction); listing it keeps the chain fixed when upstream defaults move.
ADMISSION_PLUGINS=NamespaceLifecycle,LimitRanger,ServiceAccount,NodeRestriction,TaintNodesByCondition,PodSecurity,Priority,DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,RuntimeClass,CertificateApproval,CertificateSigning,ClusterTrustBundleAttest,CertificateSubjectRestriction,DefaultIngressClass,MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,ResourceQuota

export GOTOOLCHAIN=local
# The Makefile's build configuration, as hack/setup-envtest.sh's: KWOK shares
# the Kubernetes build's compiled packages.
export GOFLAGS="-buildvcs=false -trimpath" CGO_ENABLED=0
# The cluster's processes run as root with this environment: none of them
# may send its requests to a proxy. A proxy variable is one whose name ends
# in _proxy, in any case (internal/platform/proxyenv's rule).
for var in $(compgen -e); do
  if [[ "${var,,}" == *_proxy ]]; then unset "${var}"; fi
done

log() { echo "local-cluster: $*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=local-cluster/packages.sh
source "${HACK_DIR}/local-cluster/packages.sh"
# shellcheck source=local-cluster/preflight.sh
source "${HACK_DIR}/local-cluster/preflight.sh"
# shellcheck source=local-cluster/machine.sh
source "${HACK_DIR}/local-cluster/machine.sh"
# shellcheck source=local-cluster/network.sh
source "${HACK_DIR}/local-cluster/network.sh"
# shellcheck source=local-cluster/control-plane.sh
source "${HACK_DIR}/local-cluster/control-plane.sh"
# shellcheck source=local-cluster/node-config.sh
source "${HACK_DIR}/local-cluster/node-config.sh"
# shellcheck source=local-cluster/node.sh
source "${HACK_DIR}/local-cluster/node.sh"
# shellcheck source=local-cluster/pki.sh
source "${HACK_DIR}/local-cluster/pki.sh"
# shellcheck source=local-cluster/kwok.sh
source "${HACK_DIR}/local-cluster/kwok.sh"
# shellcheck source=local-cluster/kube-router.sh
source "${HACK_DIR}/local-cluster/kube-router.sh"

usage() {
  cat >&2 <<'USAGE'
usage: hack/local-cluster.sh <command>

  build         install the node's Debian packages (debian.lock) when missing; build
                (or find cached) etcd, kube-apiserver, kube-controller-manager,
                kube-scheduler, kubelet, kube-proxy, kwok and kube-router; print
                their directories
  up            build if needed (on the host), then create the cluster's network
                namespace and start the cluster in it; wait until it is ready
                (a running cluster is left alone)
  down [--keep] stop every component (SIGTERM, SIGKILL after a grace period), the
                Pods, unmount, remove cgroups, bridge, routes and iptables chains,
                restore sysctls, unpin the network namespace; remove etcd data,
                volumes/ and logs (--keep keeps them). PKI is always kept.
                Idempotent; also cleans up after a SIGKILLed run.
  status        show each component (running/stopped) and the API server's /readyz
  env           print export lines for eval: KUBECONFIG, KUBECTL, LOCAL_CLUSTER_DIR,
                LOCAL_CLUSTER_GATEWAY_IP, LOCAL_CLUSTER_POD_CIDR, LOCAL_CLUSTER_NODE_NAME,
                LOCAL_CLUSTER_SERVICE_CIDR, LOCAL_CLUSTER_KWOK_NODE_NAME,
                LOCAL_CLUSTER_IMAGES_DIR, LOCAL_CLUSTER_VOLUMES_DIR,
                LOCAL_CLUSTER_SECCOMP_DIR, LOCAL_CLUSTER_NETNS
  exec CMD...   run CMD in the cluster's network namespace (every client of the
                cluster must: its addresses exist only there)
  snapshot      print the normalized machine state `down` must restore (for diffs)
USAGE
}

# ---------------------------------------------------------------- binaries

k8s_bin_dir() {
  # setup-envtest.sh builds every Kubernetes binary and etcd (once) and
  # prints the directory that holds them.
  "${HACK_DIR}/setup-envtest.sh"
}

# kubectl_minor prints the client minor version of a kubectl binary ("32+" -> 32).
kubectl_minor() {
  { "$1" version --client -o json 2>/dev/null || true; } |
    grep -o '"minor": *"[0-9]*' | head -n1 | grep -o '[0-9]*$' || true
}

# resolve_kubectl prints the kubectl to use: $KUBECTL, else the machine's when
# its minor is at least KUBECTL_MIN_MINOR, else one built at K8S_VERSION.
resolve_kubectl() {
  if [[ -n "${KUBECTL:-}" ]]; then
    [[ -x "${KUBECTL}" ]] || die "KUBECTL=${KUBECTL} is not executable"
    echo "${KUBECTL}"
    return 0
  fi
  local sys minor dir
  sys="$(command -v kubectl || true)"
  if [[ -n "${sys}" ]]; then
    minor="$(kubectl_minor "${sys}")"
    if [[ -n "${minor}" && "${minor}" -ge "${KUBECTL_MIN_MINOR}" ]]; then
      echo "${sys}"
      return 0
    fi
    log "${sys} is client minor '${minor:-unknown}' (< 1.${KUBECTL_MIN_MINOR}); using kubectl ${K8S_VERSION}"
  fi
  dir="$("${HACK_DIR}/setup-envtest.sh")"
  echo "${dir}/kubectl"
}

cmd_build() {
  ensure_node_packages
  mkdir -p "${CACHE_ROOT}"
  # One build at a time: two concurrent `up`s would otherwise both compile.
  exec 9>"${CACHE_ROOT}/.local-cluster-build.lock"
  flock 9
  local dir
  dir="$(k8s_bin_dir)"
  build_kwok
  build_kube_router
  flock -u 9
  echo "${dir}"
  echo "${KWOK_BIN_DIR}"
  echo "${KUBE_ROUTER_BIN_DIR}"
}

# ---------------------------------------------------------------- network namespace

# netns_pinned: the cluster's namespace exists (its pin is mounted).
netns_pinned() {
  [[ "$(findmnt -n -o FSTYPE --mountpoint "${NETNS_PIN}" 2>/dev/null)" == nsfs ]]
}

# in_netns: this process runs in the cluster's namespace.
in_netns() {
  netns_pinned && [[ "$(stat -L -c %i /proc/self/ns/net)" == "$(stat -L -c %i "${NETNS_PIN}")" ]]
}

# netns_up pins a new network namespace with only loopback up.
netns_up() {
  netns_pinned && die "the cluster's network namespace (${NETNS_PIN}) exists already; run hack/local-cluster.sh down first"
  mkdir -p "${STATE_DIR}"
  : >"${NETNS_PIN}"
  unshare --net="${NETNS_PIN}" ip link set lo up || die "cannot create the cluster's network namespace at ${NETNS_PIN}"
}

# netns_down unpins the namespace; it goes away with the last process in it
# (teardown has stopped them all before).
netns_down() {
  if netns_pinned; then
    umount "${NETNS_PIN}" || log "warning: cannot unmount ${NETNS_PIN}"
  fi
  rm -f "${NETNS_PIN}"
}

# enter ARGS...: run this script again with ARGS inside the namespace.
enter() {
  exec nsenter --net="${NETNS_PIN}" -- "${BASH_SOURCE[0]}" "$@"
}

# ---------------------------------------------------------------- processes

pid_of() {
  local f="${PID_DIR}/$1.pid"
  [[ -f "${f}" ]] && cat "${f}"
  return 0
}

# running NAME: the PID file names a live process whose argv[0] is our binary
# (a PID reused by something else does not count).
running() {
  local pid bin argv0
  pid="$(pid_of "$1")"
  [[ -n "${pid}" ]] || return 1
  [[ -r "/proc/${pid}/cmdline" ]] || return 1
  bin="$(cat "${PID_DIR}/$1.bin" 2>/dev/null || true)"
  argv0="$(tr '\0' '\n' <"/proc/${pid}/cmdline" | head -n1)"
  [[ -n "${argv0}" && "${argv0}" == "${bin}" ]]
}

# alive PID: the process exists and has not exited. An exited child of PID 1
# stays a zombie until PID 1 reaps it, which can take seconds.
alive() {
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat%% *}" != Z ]]
}

# close_inherited_fds closes every descriptor of this shell but 0, 1 and 2.
close_inherited_fds() {
  local fd
  for fd in /proc/"${BASHPID}"/fd/*; do
    fd="${fd##*/}"
    if ((fd > 2)); then exec {fd}>&- 2>/dev/null || true; fi
  done
}

# start NAME BIN ARGS...: run detached (own session, so a terminal's Ctrl-C or
# the caller's exit does not reach it), output to logs/NAME.log. It keeps no
# descriptor of the caller's but the standard ones: with
# `flock LOCK hack/local-cluster.sh up`, the components would otherwise hold
# the lock until `down` stops them, and every later `flock LOCK ...` would
# wait for a lock that the cluster, not a command, holds.
start() {
  local name="$1" bin="$2"
  shift 2
  [[ -x "${bin}" ]] || die "${name}: ${bin} is missing (run: hack/local-cluster.sh build)"
  : >"${LOG_DIR}/${name}.log"
  (
    close_inherited_fds
    exec setsid "${bin}" "$@" </dev/null >>"${LOG_DIR}/${name}.log" 2>&1
  ) &
  local pid=$!
  echo "${pid}" >"${PID_DIR}/${name}.pid"
  echo "${bin}" >"${PID_DIR}/${name}.bin"
  # Until the forked shell has exec'd setsid and setsid has exec'd the
  # binary, the PID shows another command line and `running` would call the
  # component dead; on a loaded machine that window is long enough to hit.
  local i
  for ((i = 0; i < 100; i++)); do
    running "${name}" && return 0
    alive "${pid}" || return 0 # it died; the caller's wait reports it
    sleep 0.1
  done
}

fail_component() {
  local name="$1" why="$2"
  log "error: ${name} ${why}; last lines of ${LOG_DIR}/${name}.log:"
  tail -n 30 "${LOG_DIR}/${name}.log" >&2 || true
  log "tearing down what was started (logs and etcd data kept in ${STATE_DIR})"
  teardown
  exit 1
}

# wait_for NAME DESCRIPTION COMMAND...: poll COMMAND until it succeeds, failing
# early when NAME's process has exited.
wait_for() {
  local name="$1" what="$2" deadline=$((SECONDS + TIMEOUT))
  shift 2
  until "$@" >/dev/null 2>&1; do
    running "${name}" || fail_component "${name}" "exited while waiting for ${what}"
    ((SECONDS < deadline)) || fail_component "${name}" "did not report ${what} within ${TIMEOUT}s"
    sleep 0.5
  done
}

# gateway_local: the gateway address is on the bridge. Without it, a packet to
# the API server's address would follow the default route off the machine.
gateway_local() {
  [[ "$(ip -4 -o addr show dev "${BRIDGE}" 2>/dev/null)" == *" ${GATEWAY_IP}/"* ]]
}

api_get() {
  gateway_local || { echo "local-cluster: ${GATEWAY_IP} is not on ${BRIDGE} (the cluster is down)" >&2; return 1; }
  curl -fsS --max-time 5 --cacert "${PKI_DIR}/ca.crt" --cert "${PKI_DIR}/admin.crt" --key "${PKI_DIR}/admin.key" \
    "https://${GATEWAY_IP}:${APISERVER_PORT}$1"
}

healthz_ok() { [[ "$(curl -fsSk --max-time 5 "$1")" == ok ]]; }

etcd_ok() { curl -fsS --max-time 5 "http://127.0.0.1:${ETCD_PORT}/health" | grep -q '"health":"true"'; }

readyz_ok() { [[ "$(api_get /readyz)" == ok ]]; }

default_sa_ok() { api_get /api/v1/namespaces/default/serviceaccounts/default; }

# node_ready NODE [TAINT_KEYS]: the node is Ready and its taints' keys are
# exactly TAINT_KEYS (space-separated; none by default): the not-ready taint
# TaintNodesByCondition adds at creation is gone.
node_ready() {
  local out
  out="$("${KUBECTL_BIN}" --kubeconfig "${KUBECONFIG_FILE}" get node "$1" \
    -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}|{.spec.taints[*].key}')"
  [[ "${out}" == "True|${2:-}" ]]
}

# stop_group NAME...: SIGTERM the named components together, wait for them
# to exit, SIGKILL whatever is left after GRACE seconds.
stop_group() {
  local name pid t0=${SECONDS} deadline=$((SECONDS + GRACE))
  local -a names=() pids=()
  for name in "$@"; do
    if running "${name}"; then
      pid="$(pid_of "${name}")"
      kill -TERM "${pid}" 2>/dev/null || true
      names+=("${name}")
      pids+=("${pid}")
    fi
  done
  local i live=1
  while ((live)) && ((SECONDS < deadline)); do
    live=0
    for pid in "${pids[@]}"; do alive "${pid}" && live=1; done
    ((live)) && sleep 0.2
  done
  for i in "${!pids[@]}"; do
    pid="${pids[i]}"
    if alive "${pid}"; then
      log "${names[i]} (pid ${pid}) still running after ${GRACE}s; sending SIGKILL"
      kill -KILL "${pid}" 2>/dev/null || true
      while alive "${pid}"; do sleep 0.1; done
    fi
    log "stopped ${names[i]} (pid ${pid}) in $((SECONDS - t0))s"
  done
  for name in "$@"; do rm -f "${PID_DIR}/${name}.pid" "${PID_DIR}/${name}.bin"; done
}

# stop_all stops the clients of the API server first, then the API server,
# then etcd, so nothing logs connection errors into the next run's view.
stop_all() {
  stop_group kwok kube-scheduler kube-controller-manager kube-router
  stop_group kube-apiserver
  stop_group etcd
}

# leftovers prints PIDs of processes whose command line names this state
# directory (ours, from a run whose PID files were lost).
leftovers() {
  pgrep -f -- "--kubeconfig=${STATE_DIR}/|--data-dir=${ETCD_DATA}|--client-ca-file=${PKI_DIR}/|--config[= ]${STATE_DIR}/|-address ${STATE_DIR}/" || true
}

# ---------------------------------------------------------------- commands

# up_already_running returns 0 when the cluster is up and healthy already, and
# stops the script when it is partly running or leftovers of one exist.
up_already_running() {
  local c n=0
  for c in "${COMPONENTS[@]}"; do running "${c}" && n=$((n + 1)); done
  if ((n == ${#COMPONENTS[@]})); then
    if readyz_ok 2>/dev/null; then
      log "already running (${STATE_DIR}); nothing to do"
      return 0
    fi
    die "all components run but /readyz fails; see hack/local-cluster.sh status, then down"
  fi
  if ((n > 0)); then
    cmd_status >&2 || true
    die "the cluster is partly running; run hack/local-cluster.sh down first"
  fi
  local stale
  stale="$(leftovers)"
  [[ -z "${stale}" ]] || die "processes of a previous cluster in ${STATE_DIR} are still running (pids: ${stale//$'\n'/ }); run hack/local-cluster.sh down"
  return 1
}

cmd_up() {
  up_already_running && return 0
  preflight_root
  local bins k8s_dir
  bins="$(cmd_build)"
  k8s_dir="$(sed -n 1p <<<"${bins}")"
  KUBECTL_BIN="$(resolve_kubectl)"
  node_check_images
  mkdir -p "${STATE_DIR}" "${PID_DIR}" "${LOG_DIR}" "${ETCD_DATA}" "${VOLUMES_DIR}"
  chmod 700 "${ETCD_DATA}"
  preflight "${ETCD_PORT}" "${ETCD_PEER_PORT}" "${APISERVER_PORT}" "${KCM_PORT}" "${SCHEDULER_PORT}" "${KWOK_PORT}" \
    "${KUBELET_PORT}" "${KUBELET_HEALTHZ_PORT}" "${KUBE_PROXY_HEALTHZ_PORT}" "${KUBE_PROXY_METRICS_PORT}" "${KUBE_ROUTER_PORT}"
  ! owned_chains_present ||
    die "preflight: iptables already holds KUBE-*, CNI-* or HARNESS-* chains (another Kubernetes node on this machine, or a cluster that was not torn down: hack/local-cluster.sh down)"
  gen_pki
  local c
  write_kubeconfig "${KUBECONFIG_FILE}" admin
  for c in kube-controller-manager kube-scheduler kubelet kube-proxy; do
    write_kubeconfig "${STATE_DIR}/${c}.kubeconfig" "${c}"
  done
  write_kwok_config

  local t0=${SECONDS}
  machine_record
  network_up || fail_component kube-apiserver "could not set up ${BRIDGE}, its routes and the pod firewall"
  start_control_plane "${k8s_dir}"
  node_start "${k8s_dir}"
  kube_router_start
  "${KUBECTL_BIN}" --kubeconfig "${KUBECONFIG_FILE}" apply -f "${HACK_DIR}/local-cluster/node.yaml" >&2 ||
    fail_component kube-apiserver "refused the fake node"
  wait_for kwok "node ${KWOK_NODE_NAME} Ready with only its own taint" node_ready "${KWOK_NODE_NAME}" kwok.x-k8s.io/node
  log "up in $((SECONDS - t0))s: KUBECONFIG=${KUBECONFIG_FILE}"
}

# kill_leftovers stops processes of this cluster that no PID file tracks (a
# run killed before it wrote them): SIGTERM, SIGKILL after GRACE seconds.
kill_leftovers() {
  local stale pid
  stale="$(leftovers)"
  for pid in ${stale}; do
    log "stopping leftover pid ${pid} of this cluster: $(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null | cut -c1-120)"
    kill -TERM "${pid}" 2>/dev/null || true
  done
  local deadline=$((SECONDS + GRACE)) live
  while [[ -n "${stale}" ]]; do
    live=""
    for pid in ${stale}; do alive "${pid}" && live+="${pid} "; done
    stale="${live}"
    [[ -z "${stale}" ]] && break
    if ((SECONDS >= deadline)); then
      log "sending SIGKILL to ${stale}"
      for pid in ${stale}; do kill -KILL "${pid}" 2>/dev/null || true; done
    fi
    sleep 0.2
  done
}

# teardown stops everything and puts the machine back. It relies on nothing
# being alive, so it completes after a SIGKILLed `up` or test run too. The
# network and iptables are only touched when `up` recorded the machine state
# (so `down` on a machine this cluster never ran on changes nothing there),
# and only in the network namespace the record was made in (network_teardown).
teardown() {
  node_stop
  stop_all
  kill_leftovers
  node_cleanup
  if [[ -d "${MACHINE_DIR}" ]]; then
    network_teardown
    kube_router_cleanup
    machine_restore
  fi
  netns_down
}

cmd_down() {
  local keep=0
  case "${1:-}" in
    "") ;;
    --keep) keep=1 ;;
    *) usage; exit 2 ;;
  esac
  teardown
  # Every kubeconfig names the gateway address, which is gone with the
  # namespace: a client outside it would send its packets along the host's
  # default route. `up` writes them again.
  rm -f "${KUBECONFIG_FILE}" "${STATE_DIR}"/*.kubeconfig
  if ((keep == 0)); then
    rm -rf "${ETCD_DATA}" "${LOG_DIR}" "${VOLUMES_DIR}" "${STATE_DIR}/kwok.yaml"
  fi
  log "down"
}

# health NAME: the component's own health endpoint answers ok.
health() {
  case "$1" in
    etcd) etcd_ok ;;
    kube-apiserver) readyz_ok ;;
    kube-controller-manager) healthz_ok "https://127.0.0.1:${KCM_PORT}/healthz" ;;
    kube-scheduler) healthz_ok "https://127.0.0.1:${SCHEDULER_PORT}/healthz" ;;
    kwok) healthz_ok "http://127.0.0.1:${KWOK_PORT}/healthz" ;;
    containerd) containerd_ok >/dev/null ;;
    kubelet) healthz_ok "http://127.0.0.1:${KUBELET_HEALTHZ_PORT}/healthz" ;;
    kube-proxy) curl -fsS --max-time 5 "http://127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}/healthz" >/dev/null ;;
    kube-router) kube_router_synced ;;
  esac
}

cmd_status() {
  local c state rc=0
  for c in "${COMPONENTS[@]}"; do
    if ! running "${c}"; then
      state=stopped
      rc=1
    elif health "${c}" 2>/dev/null; then
      state="running (pid $(pid_of "${c}")), healthy"
    else
      state="running (pid $(pid_of "${c}")), NOT healthy"
      rc=1
    fi
    printf '%-24s %s\n' "${c}" "${state}"
  done
  if [[ -f "${PKI_DIR}/admin.crt" ]] && readyz_ok 2>/dev/null; then
    printf '%-24s %s\n' readyz ok
  else
    printf '%-24s %s\n' readyz failing
    rc=1
  fi
  return "${rc}"
}

cmd_env() {
  local kubectl
  kubectl="$(resolve_kubectl)"
  printf 'export KUBECONFIG=%q\n' "${KUBECONFIG_FILE}"
  printf 'export KUBECTL=%q\n' "${kubectl}"
  printf 'export LOCAL_CLUSTER_DIR=%q\n' "${STATE_DIR}"
  # Clients of the cluster run in its network namespace (exec, or nsenter).
  printf 'export LOCAL_CLUSTER_NETNS=%q\n' "${NETNS_PIN}"
  printf 'export LOCAL_CLUSTER_GATEWAY_IP=%q\n' "${GATEWAY_IP}"
  printf 'export LOCAL_CLUSTER_POD_CIDR=%q\n' "${POD_CIDR}"
  printf 'export LOCAL_CLUSTER_SERVICE_CIDR=%q\n' "${SERVICE_CIDR}"
  printf 'export LOCAL_CLUSTER_NODE_NAME=%q\n' "${NODE_NAME}"
  printf 'export LOCAL_CLUSTER_KWOK_NODE_NAME=%q\n' "${KWOK_NODE_NAME}"
  printf 'export LOCAL_CLUSTER_IMAGES_DIR=%q\n' "${IMAGES_DIR}"
  printf 'export LOCAL_CLUSTER_VOLUMES_DIR=%q\n' "${VOLUMES_DIR}"
  # Localhost seccomp profiles of Pods are files here (the kubelet's
  # <root-dir>/seccomp).
  printf 'export LOCAL_CLUSTER_SECCOMP_DIR=%q\n' "${KUBELET_ROOT}/seccomp"
}

# cmd_exec CMD...: run CMD in the cluster's network namespace.
cmd_exec() {
  [[ $# -gt 0 ]] || { usage; exit 2; }
  in_netns && exec "$@"
  netns_pinned || die "the cluster is not up (no network namespace at ${NETNS_PIN})"
  exec nsenter --net="${NETNS_PIN}" -- "$@"
}

main() {
  local cmd="${1:-}"
  [[ $# -gt 0 ]] && shift
  case "${cmd}" in
    build) cmd_build ;;
    up)
      [[ $# -eq 0 ]] || { usage; exit 2; }
      if ! in_netns; then
        # An existing namespace: the check inside says whether it is up.
        if netns_pinned; then enter up; fi
        up_already_running && return 0
        preflight_root
        # Installing packages and building need the registries: on the host.
        cmd_build >/dev/null
        netns_up
        enter up
      fi
      cmd_up
      ;;
    down)
      if netns_pinned && ! in_netns; then enter down "$@"; fi
      cmd_down "$@"
      ;;
    status)
      if netns_pinned && ! in_netns; then enter status; fi
      cmd_status
      ;;
    env) cmd_env ;;
    exec) cmd_exec "$@" ;;
    snapshot) exec "${HACK_DIR}/local-cluster/snapshot.sh" ;;
    -h | --help | help) usage ;;
    *) usage; exit 2 ;;
  esac
}

# Sourced (hack/local-cluster/down-test.sh), it only defines.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then main "$@"; fi
