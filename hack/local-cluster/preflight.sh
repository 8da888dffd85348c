# shellcheck shell=bash
# preflight.sh (sourced by hack/local-cluster.sh): what the real node needs from
# the machine, checked before `up` changes anything. Each failed check stops
# `up` with the reason and what to do; nothing is skipped.

preflight_fail() { die "preflight: $*"; }

preflight_root() {
  [[ ${EUID} -eq 0 ]] || preflight_fail "the real node (containerd, kubelet, kube-proxy, a bridge, iptables) needs root; run as root"
}

# preflight_cgroups: every cgroup hierarchy kubelet and runc use is mounted
# and lets us create a child (a read-only /sys/fs/cgroup, as in an
# unprivileged container, does not).
preflight_cgroups() {
  local fstype mnt probe
  if [[ "$(stat -fc %T /sys/fs/cgroup)" == cgroup2fs ]]; then
    mnt=/sys/fs/cgroup
  else
    local sub
    for sub in cpu cpuacct cpuset memory pids devices freezer; do
      mnt="$(awk -v s="${sub}" '$3 == "cgroup" { n = split($4, o, ","); for (i = 1; i <= n; i++) if (o[i] == s) { print $2; exit } }' /proc/mounts)"
      [[ -n "${mnt}" ]] || preflight_fail "the cgroup v1 '${sub}' controller is not mounted (kubelet needs cpu, cpuacct, cpuset, memory, pids, devices, freezer)"
      probe="${mnt}/harness-local-cluster-preflight.$$"
      mkdir "${probe}" 2>/dev/null || preflight_fail "cannot create a cgroup in ${mnt} (read-only or not permitted); the node needs writable cgroups"
      rmdir "${probe}"
    done
    return 0
  fi
  fstype=cgroup2
  probe="${mnt}/harness-local-cluster-preflight.$$"
  mkdir "${probe}" 2>/dev/null || preflight_fail "cannot create a ${fstype} cgroup in ${mnt}; the node needs writable cgroups"
  rmdir "${probe}"
}

# preflight_overlayfs mounts an overlay where containerd's snapshotter will
# keep its layers (the state directory's file system).
preflight_overlayfs() {
  local d
  d="$(mktemp -d "${STATE_DIR}/.preflight-overlay.XXXXXX")"
  mkdir "${d}/lower" "${d}/upper" "${d}/work" "${d}/merged"
  if ! mount -t overlay overlay -o "lowerdir=${d}/lower,upperdir=${d}/upper,workdir=${d}/work" "${d}/merged" 2>/dev/null; then
    rm -rf "${d}"
    preflight_fail "cannot mount overlayfs on ${STATE_DIR} ($(stat -fc %T "${STATE_DIR}")); containerd's overlayfs snapshotter needs it (set LOCAL_CLUSTER_DIR to a directory on ext4 or xfs)"
  fi
  umount "${d}/merged"
  rm -rf "${d}"
}

preflight_iptables() {
  local t
  for t in iptables ip6tables nft; do
    command -v "${t}" >/dev/null || preflight_fail "${t} is missing (it comes with debian.lock's packages)"
  done
  iptables -w -S FORWARD >/dev/null 2>&1 ||
    preflight_fail "iptables cannot read the filter table ($(iptables -w -S FORWARD 2>&1 | awk 'NR == 1')); kube-proxy and the pod firewall need it"
  iptables -w -t nat -S >/dev/null 2>&1 || preflight_fail "iptables cannot read the nat table; kube-proxy needs it"
  nft list tables >/dev/null 2>&1 || preflight_fail "nft cannot list tables ($(nft list tables 2>&1 | awk 'NR == 1'))"
}

# preflight_network: in the namespace the cluster runs in, the bridge name, the
# pod range and the service range are ours alone, and no listener holds a port
# the cluster binds. A route overlaps a range when it lies inside it (root) or
# contains it (match: e.g. 10.0.0.0/8, or a default route); either would
# compete with the cluster's own routes for its addresses.
preflight_network() {
  ip link show "${BRIDGE}" >/dev/null 2>&1 &&
    preflight_fail "network interface ${BRIDGE} exists (a previous cluster: hack/local-cluster.sh down; otherwise set LOCAL_CLUSTER_BRIDGE)"
  local cidr used
  for cidr in "${POD_CIDR}" "${SERVICE_CIDR}"; do
    used="$(ip -4 -o route show table all root "${cidr}" 2>/dev/null
      ip -4 -o route show table all match "${cidr}" 2>/dev/null
      ip -4 -o addr show to "${cidr}" 2>/dev/null)"
    [[ -z "${used}" ]] || preflight_fail "${cidr} overlaps what this network namespace already has: ${used%%$'\n'*}"
  done
  local p owner
  for p in "$@"; do
    owner="$(ss -Hltnp "sport = :${p}" 2>/dev/null | awk 'NR == 1')"
    [[ -z "${owner}" ]] || preflight_fail "port ${p} is in use (${owner//  / }); stop its owner or set the LOCAL_CLUSTER_*_PORT variables"
  done
}

# preflight_cgroup_root: kubelet's --cgroup-root is the same for every state
# directory, so it exists only while a node of this script runs (here or from
# another checkout) or was not torn down. A second node would share it, and
# each would record the other's changes to the machine as the original state.
preflight_cgroup_root() {
  local d
  for d in $(cgroup_roots); do
    [[ ! -e "${d}" ]] ||
      preflight_fail "${d} exists: another local cluster's node runs on this machine (another state directory), or one was not torn down (hack/local-cluster.sh down in its checkout)"
  done
}

# preflight PORT...: all checks; the ports are every port the cluster listens on.
preflight() {
  preflight_root
  preflight_cgroups
  preflight_cgroup_root
  preflight_overlayfs
  preflight_iptables
  preflight_network "$@"
}
