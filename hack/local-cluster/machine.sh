# shellcheck shell=bash
# machine.sh (sourced by hack/local-cluster.sh) records, at `up`, the machine
# state the real node changes outside its state directory, and puts it back at
# `down`: sysctls (kubelet's kernel tunables, ip_forward from the CNI bridge
# plugin, what kube-proxy may touch), the nftables tables iptables-nft creates,
# and the directories containerd, kubelet and the CNI library create. The
# record lives in ${STATE_DIR}/machine/ until `down` has restored it, so a
# `down` after a SIGKILLed `up` still knows what the machine was.

MACHINE_DIR="${STATE_DIR}/machine"

# Every sysctl kubelet (setupKernelTunables), kube-proxy (conntrack, route_localnet)
# or the CNI bridge plugin (ip_forward, which also sets each interface's
# forwarding) can write. kube-proxy is configured to write none of them; they
# are recorded anyway, so a changed default cannot leak.
NODE_SYSCTLS=(
  vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes
  net.ipv4.ip_forward net.ipv4.conf.all.forwarding net.ipv4.conf.default.forwarding
  net.ipv4.conf.all.route_localnet net.ipv4.conf.default.route_localnet
  net.ipv6.conf.all.forwarding net.ipv6.conf.default.forwarding
  net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.bridge.bridge-nf-call-arptables
  net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established
  net.netfilter.nf_conntrack_tcp_timeout_close_wait net.netfilter.nf_conntrack_tcp_be_liberal
  net.netfilter.nf_conntrack_udp_timeout net.netfilter.nf_conntrack_udp_timeout_stream
)

# Directories created outside the state directory by code paths that cannot be
# pointed elsewhere: shim sockets (containerd's socket root is compiled in),
# the CNI result cache (go-cni), kubelet's /var/log/containers symlinks and its
# device-plugin socket (/var/lib/kubelet/device-plugins, a constant).
NODE_PATHS=(/run/containerd /var/lib/cni /var/log/containers /var/lib/kubelet)

# node_sysctls prints the recorded sysctls plus each existing interface's
# ipv4 forwarding and route_localnet (writing ip_forward rewrites them all).
node_sysctls() {
  printf '%s\n' "${NODE_SYSCTLS[@]}"
  local d
  for d in /proc/sys/net/ipv4/conf/*/; do
    d="$(basename "${d}")"
    [[ "${d}" == all || "${d}" == default ]] && continue
    echo "net.ipv4.conf.${d}.forwarding"
    echo "net.ipv4.conf.${d}.route_localnet"
  done
}

# machine_record writes what `down` restores; it refuses to overwrite a record
# that `down` has not restored yet (the machine is not in its original state).
machine_record() {
  [[ -d "${MACHINE_DIR}" ]] &&
    die "${MACHINE_DIR} holds the machine state of a cluster that was not torn down; run hack/local-cluster.sh down first"
  mkdir -p "${MACHINE_DIR}.tmp"
  local k v
  while read -r k; do
    v="$(sysctl -n "${k}" 2>/dev/null)" || continue
    printf '%s=%s\n' "${k}" "${v}"
  done < <(node_sysctls) >"${MACHINE_DIR}.tmp/sysctls"
  nft list tables >"${MACHINE_DIR}.tmp/nft-tables"
  for k in "${NODE_PATHS[@]}"; do [[ -e "${k}" ]] || echo "${k}"; done >"${MACHINE_DIR}.tmp/absent-paths"
  mv "${MACHINE_DIR}.tmp" "${MACHINE_DIR}"
}

# machine_restore puts back what machine_record saw: sysctls (ip_forward first,
# since writing it resets every interface's forwarding), nftables tables that
# did not exist and are empty now, directories that did not exist.
machine_restore() {
  rm -rf "${MACHINE_DIR}.tmp"
  [[ -d "${MACHINE_DIR}" ]] || return 0
  local line k v
  if [[ -f "${MACHINE_DIR}/sysctls" ]]; then
    line="$(grep '^net.ipv4.ip_forward=' "${MACHINE_DIR}/sysctls" || true)"
    [[ -z "${line}" ]] || sysctl -qw "${line}" >/dev/null
    while IFS= read -r line; do
      k="${line%%=*}" v="${line#*=}"
      [[ "$(sysctl -n "${k}" 2>/dev/null)" == "${v}" ]] && continue
      # An interface that is gone has no sysctls left to restore.
      [[ -e "/proc/sys/${k//.//}" ]] || continue
      log "restoring ${k}=${v} (was $(sysctl -n "${k}"))"
      sysctl -qw "${k}=${v}" >/dev/null || log "warning: cannot restore ${k}=${v}"
    done <"${MACHINE_DIR}/sysctls"
  fi
  if [[ -f "${MACHINE_DIR}/nft-tables" ]] && command -v nft >/dev/null; then
    local fam name
    while read -r _ fam name; do
      grep -qxF "table ${fam} ${name}" "${MACHINE_DIR}/nft-tables" && continue
      # A table with rules belongs to something else that ran meanwhile. (nft
      # prints a rule two tabs deep; so is a base chain's "type ... hook" line.)
      if [[ "$(nft list table "${fam}" "${name}" 2>/dev/null | awk '/^\t\t/ && !/^\t\ttype / { n++ } END { print n + 0 }')" != 0 ]]; then
        log "warning: nftables table ${fam} ${name} appeared while the cluster ran and still has rules; left alone"
        continue
      fi
      nft delete table "${fam}" "${name}" || log "warning: cannot delete nftables table ${fam} ${name}"
    done < <(nft list tables 2>/dev/null)
  fi
  if [[ -f "${MACHINE_DIR}/absent-paths" ]]; then
    while IFS= read -r k; do
      [[ -n "${k}" && -e "${k}" ]] || continue
      log "removing ${k} (created by the node)"
      rm -rf -- "${k}"
    done <"${MACHINE_DIR}/absent-paths"
  fi
  rm -rf "${MACHINE_DIR}"
}
