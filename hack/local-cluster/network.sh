# shellcheck shell=bash
# network.sh (sourced by hack/local-cluster.sh) owns the real node's network in
# the cluster's network namespace: the bridge the CNI plugin attaches Pods to
# (with the gateway address the API server listens on), the route that keeps
# the service range on that bridge, the firewall rule that keeps Pods' traffic
# on the machine, and the removal of every iptables chain the node's
# components create. Everything here runs only in that namespace, where every
# chain, route and link is the cluster's.

FIREWALL_CHAIN=HARNESS-POD-EGRESS
# Chains of kube-proxy and kubelet (KUBE-*), of CNI plugins (CNI-*) and ours.
OWNED_CHAINS='KUBE-|CNI-|HARNESS-'

# network_up: the bridge and its gateway address exist before the API server
# binds there, and the service range is routed to the bridge before anything
# can send to a Service: until kube-proxy's rules exist, such a packet goes to
# a bridge where nothing answers instead of following the default route.
network_up() {
  ip link add "${BRIDGE}" type bridge
  ip addr add "${GATEWAY_IP}/${POD_CIDR#*/}" dev "${BRIDGE}"
  ip link set "${BRIDGE}" up
  ip route add "${SERVICE_CIDR}" dev "${BRIDGE}"
  firewall_up
}

# firewall_up: Pods may talk to Pods and to the host (which is INPUT, not
# FORWARD); anything else they send through the host is dropped, and so is
# anything forwarded to them from elsewhere. The CNI bridge plugin turns
# ip_forward on, which makes every interface forward: when the machine did not
# forward before `up`, only packets arriving on the bridge are forwarded. The
# rules sit in mangle FORWARD, which runs after Service DNAT (so a Service
# whose backend is a Pod or the host passes) and before filter FORWARD, where
# an ACCEPT of kube-proxy's could not override them. Nothing ever probes an
# outside address to prove them; check that they exist instead.
firewall_up() {
  local chain=(iptables -w -t mangle -A "${FIREWALL_CHAIN}")
  iptables -w -t mangle -N "${FIREWALL_CHAIN}"
  "${chain[@]}" -s "${POD_CIDR}" -d "${POD_CIDR}" -j RETURN
  "${chain[@]}" -s "${POD_CIDR}" -m comment --comment "harness local cluster: pods reach pods and the host only" -j DROP
  "${chain[@]}" -d "${POD_CIDR}" -m comment --comment "harness local cluster: only pods reach pods through the host" -j DROP
  if [[ "$(sed -n 's/^net.ipv4.ip_forward=//p' "${MACHINE_DIR}/sysctls")" == 0 ]]; then
    "${chain[@]}" ! -i "${BRIDGE}" -m comment --comment "harness local cluster: the host forwarded nothing before" -j DROP
  fi
  iptables -w -t mangle -I FORWARD 1 -j "${FIREWALL_CHAIN}"
}

# network_teardown undoes network_up and what the node's components added,
# only in the namespace `up` recorded (machine_netns_here). Anywhere else this
# process sees the host's network, where a KUBE-* chain, a bridge of the same
# name or a route to the same range belongs to someone else: it is left alone.
# The namespace's own go with it.
network_teardown() {
  if ! machine_netns_here; then
    log "not in the cluster's network namespace (it is gone, and its bridge, routes and chains with it): the host's network is left alone"
    return 0
  fi
  network_down
  iptables_cleanup
}

# network_down removes the service route, the bridge and every veth left on it
# (a veth whose Pod network namespace is gone has already vanished).
network_down() {
  ip route del "${SERVICE_CIDR}" dev "${BRIDGE}" 2>/dev/null || true
  local veth
  for veth in $(ip -o link show master "${BRIDGE}" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "${veth}" 2>/dev/null || true
  done
  if ip link show "${BRIDGE}" >/dev/null 2>&1; then
    ip link del "${BRIDGE}" || log "warning: cannot delete ${BRIDGE}"
  fi
}

# owned_chains_present: some iptables backend holds a chain of ours (preflight
# refuses: another node, or a cluster not torn down, would be disturbed).
owned_chains_present() {
  local save
  for save in iptables-save ip6tables-save iptables-legacy-save ip6tables-legacy-save; do
    command -v "${save}" >/dev/null || continue
    # Read whole before matching: grep -q exiting early would SIGPIPE the
    # writer, and pipefail would turn a match into a failure.
    grep -qE "^:(${OWNED_CHAINS})" <<<"$("${save}" 2>/dev/null)" && return 0
  done
  return 1
}

# iptables_cleanup removes from every backend (nft and legacy, IPv4 and IPv6)
# each chain named like ours and each rule that jumps to one, by rewriting only
# the tables that hold them. Only tables that exist are read: naming a legacy
# table that does not exist would create it. Only network_teardown calls it,
# in the cluster's namespace: every such chain there is the cluster's.
iptables_cleanup() {
  local tool table tables dump
  for tool in iptables ip6tables iptables-legacy ip6tables-legacy; do
    command -v "${tool}-save" >/dev/null || continue
    tables="$("${tool}-save" 2>/dev/null | sed -n 's/^\*//p')"
    for table in ${tables}; do
      dump="$("${tool}-save" -t "${table}" 2>/dev/null)"
      grep -qE "^:(${OWNED_CHAINS})|-j (${OWNED_CHAINS})" <<<"${dump}" || continue
      log "removing the node's chains from ${tool} ${table}"
      grep -vE "^:(${OWNED_CHAINS})|^-A (${OWNED_CHAINS})|-j (${OWNED_CHAINS})" <<<"${dump}" |
        "${tool}-restore" -w -T "${table}" || log "warning: ${tool}-restore -T ${table} failed"
    done
  done
}
