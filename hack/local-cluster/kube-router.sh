# shellcheck shell=bash
# kube-router.sh (sourced by hack/local-cluster.sh) makes the real node enforce
# NetworkPolicy: kube-router's network-policy controller alone (its firewall;
# its router, service proxy, load-balancer allocator and CNI off), on node-0 in
# the cluster's network namespace. It programs iptables (the same `iptables`,
# so the same nf_tables backend, as kube-proxy) and ipset; the CNI bridge
# plugin stays the Pods' network. Here: its build, its identity and RBAC, its
# start, and the removal of its ipsets at `down`.
# shellcheck disable=SC2153 # the ports and addresses are set by hack/local-cluster.sh

KUBE_ROUTER_PORT="${LOCAL_CLUSTER_KUBE_ROUTER_PORT:-20253}"
KUBE_ROUTER_KUBECONFIG="${STATE_DIR}/kube-router.kubeconfig"
# Chains it creates (KUBE-ROUTER-*, KUBE-POD-FW-*, KUBE-NWPLCY-*) are KUBE-*:
# network.sh's teardown removes them with kube-proxy's. Its ipsets:
KUBE_ROUTER_IPSETS='^(KUBE-|inet6:KUBE-)'

# build_kube_router builds kube-router into KUBE_ROUTER_BIN_DIR once, with
# `go install` in its own module graph (its go.mod's k8s.io/* v0.29): it is
# run against the cluster only through the API, and its tested dependency
# set is what enforces policies here.
build_kube_router() {
  [[ -x "${KUBE_ROUTER_BIN_DIR}/kube-router" ]] && return 0
  mkdir -p "${KUBE_ROUTER_BIN_DIR}"
  local tmp
  tmp="$(mktemp -d "${KUBE_ROUTER_BIN_DIR}/.build.XXXXXX")"
  log "building kube-router ${KUBE_ROUTER_VERSION} with go install (about 3 minutes cold)"
  GOBIN="${tmp}" go install -ldflags "-s -w" \
    "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@${KUBE_ROUTER_VERSION}" >&2 ||
    { rm -rf "${tmp}"; die "go install github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@${KUBE_ROUTER_VERSION} failed"; }
  mv "${tmp}/kube-router" "${KUBE_ROUTER_BIN_DIR}/kube-router"
  rmdir "${tmp}"
}

# kube_router_rbac: what kube-router documents for its firewall (its
# generic-kuberouter.yaml), less what only its other controllers use (leases,
# services/status, the extensions group the API no longer serves). It starts
# an informer on each of these kinds, and reads its own Node.
kube_router_rbac() {
  "${KUBECTL_BIN}" --kubeconfig "${KUBECONFIG_FILE}" apply -f - >&2 <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: local-cluster:kube-router-firewall
rules:
- apiGroups: [""]
  resources: [namespaces, pods, services, nodes, endpoints]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: local-cluster:kube-router-firewall
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: local-cluster:kube-router-firewall}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: local-cluster:kube-router}
YAML
}

# kube_router_synced: its default policy chain exists, which its first full
# sync creates after the informers synced: from then on every NetworkPolicy
# of a Pod on the node is enforced.
kube_router_synced() {
  curl -fsS --max-time 5 "http://127.0.0.1:${KUBE_ROUTER_PORT}/healthz" >/dev/null &&
    iptables -w -t filter -S KUBE-NWPLCY-DEFAULT >/dev/null 2>&1
}

# kube_router_start: after the node registered (kube-router reads its Node for
# the node's addresses: the podCIDR it does not need; only its router does).
# Bridged Pod-to-Pod traffic reaches iptables only through br_netfilter:
# bridge-nf-call-iptables is per network namespace, 1 in a new one; it is set
# anyway (machine.sh records and restores it).
kube_router_start() {
  sign kube-router "/CN=local-cluster:kube-router" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth" ca
  write_kubeconfig "${KUBE_ROUTER_KUBECONFIG}" kube-router
  kube_router_rbac || fail_component kube-apiserver "refused kube-router's RBAC"
  sysctl -qw net.bridge.bridge-nf-call-iptables=1 ||
    fail_component kube-apiserver "cannot set net.bridge.bridge-nf-call-iptables in the cluster's network namespace"
  start kube-router "${KUBE_ROUTER_BIN_DIR}/kube-router" --kubeconfig="${KUBE_ROUTER_KUBECONFIG}" \
    --hostname-override="${NODE_NAME}" --run-firewall=true --run-router=false --run-service-proxy=false \
    --run-loadbalancer=false --enable-cni=false --service-cluster-ip-range="${SERVICE_CIDR}" \
    --health-port="${KUBE_ROUTER_PORT}" --metrics-port=0
  wait_for kube-router "its first policy sync" kube_router_synced
}

# kube_router_cleanup destroys kube-router's ipsets, in the cluster's
# namespace only (they go with it anyway; a `down` there leaves none behind
# while the namespace lives). iptables_cleanup has removed the rules that
# referenced them.
kube_router_cleanup() {
  machine_netns_here || return 0
  command -v ipset >/dev/null || return 0
  local -a sets
  mapfile -t sets < <(ipset list -n 2>/dev/null | grep -E "${KUBE_ROUTER_IPSETS}" || true)
  ((${#sets[@]} > 0)) || return 0
  log "destroying kube-router's ${#sets[@]} ipsets"
  local set
  for set in "${sets[@]}"; do
    ipset destroy "${set}" 2>/dev/null || log "warning: cannot destroy ipset ${set}"
  done
}
