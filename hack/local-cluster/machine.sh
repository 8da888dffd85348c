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
# pointed elsewhere, each parent before its children: shim sockets
# (containerd's socket root is compiled in), the CNI result cache (go-cni),
# kubelet's /var/log/containers symlinks and its device-plugin socket
# (/var/lib/kubelet/device-plugins, a constant).
NODE_PATHS=(/run/containerd /run/containerd/s /var/lib/cni /var/lib/cni/results /var/log/containers
  /var/lib/kubelet /var/lib/kubelet/device-plugins)
# Files of fixed names the node makes in them: kubelet's device-plugin socket
# and checkpoint. (Our entries of the other directories have names of their
# own, which node_files_cleanup removes.)
NODE_FILES=(/var/lib/kubelet/device-plugins/kubelet.sock /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint)

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
  for k in "${NODE_PATHS[@]}" "${NODE_FILES[@]}"; do [[ -e "${k}" ]] || echo "${k}"; done >"${MACHINE_DIR}.tmp/absent-paths"
  # The network namespace the record was made in (the cluster's): the
  # network half of the record is restored only there.
  stat -L -c %i /proc/self/ns/net >"${MACHINE_DIR}.tmp/netns"
  mv "${MACHINE_DIR}.tmp" "${MACHINE_DIR}"
}

# machine_netns_here: this process runs in the network namespace the record
# was made in. Elsewhere (the namespace is gone, e.g. its pin was unmounted or
# the machine rebooted) the bridge, routes, chains, nftables tables and
# network sysctls went with the namespace, and what this process sees are
# the host's: they are not ours to change. A record without the namespace
# counts as elsewhere.
machine_netns_here() {
  [[ -f "${MACHINE_DIR}/netns" && "$(cat "${MACHINE_DIR}/netns")" == "$(stat -L -c %i /proc/self/ns/net)" ]]
}

# machine_restore puts back what machine_record saw: sysctls (ip_forward first,
# since writing it resets every interface's forwarding), nftables tables that
# did not exist and are empty now, files and directories that did not exist.
# The network sysctls and nftables tables only in the record's namespace
# (machine_netns_here).
machine_restore() {
  rm -rf "${MACHINE_DIR}.tmp"
  [[ -d "${MACHINE_DIR}" ]] || return 0
  local line k v net=0
  if machine_netns_here; then
    net=1
  else
    log "not in the cluster's network namespace: the host's network sysctls and nftables tables are left alone"
  fi
  if [[ -f "${MACHINE_DIR}/sysctls" ]]; then
    line="$(grep '^net.ipv4.ip_forward=' "${MACHINE_DIR}/sysctls" || true)"
    [[ -z "${line}" ]] || ((net == 0)) || sysctl -qw "${line}" >/dev/null
    while IFS= read -r line; do
      k="${line%%=*}" v="${line#*=}"
      [[ "${k}" == net.* ]] && ((net == 0)) && continue
      [[ "$(sysctl -n "${k}" 2>/dev/null)" == "${v}" ]] && continue
      # An interface that is gone has no sysctls left to restore.
      [[ -e "/proc/sys/${k//.//}" ]] || continue
      log "restoring ${k}=${v} (was $(sysctl -n "${k}"))"
      sysctl -qw "${k}=${v}" >/dev/null || log "warning: cannot restore ${k}=${v}"
    done <"${MACHINE_DIR}/sysctls"
  fi
  if ((net)) && [[ -f "${MACHINE_DIR}/nft-tables" ]] && command -v nft >/dev/null; then
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
    node_absent_paths <"${MACHINE_DIR}/absent-paths" | remove_node_paths
  fi
  rm -rf "${MACHINE_DIR}"
}

# node_absent_paths prints, in the order of NODE_PATHS and NODE_FILES, each of
# them that the record it reads lists or that lies under one the record lists:
# what is below a path that did not exist did not exist either (a record of
# an older script lists only the top directories).
node_absent_paths() {
  local -a record
  mapfile -t record
  local n r
  for n in "${NODE_PATHS[@]}" "${NODE_FILES[@]}"; do
    for r in "${record[@]}"; do
      if [[ -n "${r}" && ("${n}" == "${r}" || "${n}" == "${r}"/*) ]]; then
        echo "${n}"
        break
      fi
    done
  done
}

# remove_node_paths removes the paths it reads (those of NODE_PATHS and
# NODE_FILES that did not exist before `up`), children first: a file of
# NODE_FILES, a directory only when empty. node_files_cleanup has removed our
# entries of the directories before; whatever is left in one was made by
# something else meanwhile, so the directory stays, and we say so.
remove_node_paths() {
  local k left
  while IFS= read -r k; do
    [[ -n "${k}" ]] || continue
    if [[ -L "${k}" || -f "${k}" || -S "${k}" ]]; then
      if [[ " ${NODE_FILES[*]} " == *" ${k} "* ]]; then
        rm -f -- "${k}"
      else
        log "warning: ${k} is no directory of the node's; left alone"
      fi
    elif [[ -d "${k}" ]]; then
      if ! rmdir -- "${k}" 2>/dev/null; then
        left="$(ls -A -- "${k}" 2>/dev/null | awk 'NR <= 3' | tr '\n' ' ')"
        log "warning: ${k} did not exist before up and now holds what the node did not make (${left% }); left alone"
      fi
    fi
  done < <(tac)
}
