# shellcheck shell=bash
# control-plane.sh (sourced by hack/local-cluster.sh) starts the control plane:
# etcd, the API server on the bridge's gateway address with the kubernetes
# Service's endpoints pointing there, kube-controller-manager, kube-scheduler
# and kwok (the fake node's kubelet).

# write_kubernetes_endpoints points the kubernetes Service at the gateway
# address. The API server runs with --endpoint-reconciler-type=none: its own
# reconciler would publish an address it picks itself (it refuses loopback).
write_kubernetes_endpoints() {
  wait_for kube-apiserver "the kubernetes Service" api_get /api/v1/namespaces/default/services/kubernetes
  "${KUBECTL_BIN}" --kubeconfig "${KUBECONFIG_FILE}" apply -f - >&2 <<YAML ||
apiVersion: v1
kind: Endpoints
metadata:
  name: kubernetes
  namespace: default
  labels:
    endpointslice.kubernetes.io/skip-mirror: "true"
subsets:
- addresses: [{ip: ${GATEWAY_IP}}]
  ports: [{name: https, port: ${APISERVER_PORT}, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: kubernetes
  namespace: default
  labels:
    kubernetes.io/service-name: kubernetes
    endpointslice.kubernetes.io/managed-by: local-cluster.harness-operator
addressType: IPv4
endpoints:
- addresses: [${GATEWAY_IP}]
  conditions: {ready: true}
ports:
- {name: https, port: ${APISERVER_PORT}, protocol: TCP}
YAML
    fail_component kube-apiserver "refused the kubernetes Service's endpoints"
}

# start_control_plane K8S_DIR: etcd, the API server (on the gateway address),
# the kubernetes Service's endpoints, controller-manager, scheduler and kwok.
start_control_plane() {
  local k8s_dir="$1"
  start etcd "${k8s_dir}/etcd" --name=local-cluster --data-dir="${ETCD_DATA}" \
    --listen-client-urls="http://127.0.0.1:${ETCD_PORT}" --advertise-client-urls="http://127.0.0.1:${ETCD_PORT}" \
    --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
    --initial-cluster="local-cluster=http://127.0.0.1:${ETCD_PEER_PORT}" --unsafe-no-fsync=true
  wait_for etcd "health" etcd_ok

  # Pods reach it at the gateway (the kubernetes Service's endpoint); so does
  # every client on the host. Aggregated APIs and kubelets are dialled at the
  # addresses their objects name (Service endpoints, the node's InternalIP),
  # never at something the API server resolves itself.
  local t0=${SECONDS}
  start kube-apiserver "${k8s_dir}/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:${ETCD_PORT}" --bind-address="${GATEWAY_IP}" --secure-port="${APISERVER_PORT}" \
    --advertise-address="${GATEWAY_IP}" --endpoint-reconciler-type=none \
    --enable-aggregator-routing=true --kubelet-preferred-address-types=InternalIP \
    --kubelet-client-certificate="${PKI_DIR}/apiserver-kubelet-client.crt" \
    --kubelet-client-key="${PKI_DIR}/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority="${PKI_DIR}/ca.crt" \
    --tls-cert-file="${PKI_DIR}/apiserver.crt" --tls-private-key-file="${PKI_DIR}/apiserver.key" \
    --client-ca-file="${PKI_DIR}/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="${PKI_DIR}/sa.pub" --service-account-signing-key-file="${PKI_DIR}/sa.key" \
    --service-cluster-ip-range="${SERVICE_CIDR}" \
    --authorization-mode=Node,RBAC \
    --enable-admission-plugins="${ADMISSION_PLUGINS}" \
    --allow-privileged=true \
    --requestheader-client-ca-file="${PKI_DIR}/front-proxy-ca.crt" \
    --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="${PKI_DIR}/front-proxy-client.crt" --proxy-client-key-file="${PKI_DIR}/front-proxy-client.key" \
    --cert-dir="${PKI_DIR}/apiserver-generated"
  wait_for kube-apiserver "/readyz" readyz_ok
  log "kube-apiserver ready after $((SECONDS - t0))s"
  write_kubernetes_endpoints

  local kcm_kc="${STATE_DIR}/kube-controller-manager.kubeconfig"
  start kube-controller-manager "${k8s_dir}/kube-controller-manager" \
    --kubeconfig="${kcm_kc}" --authentication-kubeconfig="${kcm_kc}" --authorization-kubeconfig="${kcm_kc}" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="${KCM_PORT}" \
    --cert-dir="${PKI_DIR}/kube-controller-manager-generated" \
    --service-account-private-key-file="${PKI_DIR}/sa.key" --root-ca-file="${PKI_DIR}/ca.crt" \
    --cluster-signing-cert-file="${PKI_DIR}/ca.crt" --cluster-signing-key-file="${PKI_DIR}/ca.key" \
    --use-service-account-credentials=true --controllers='*'
  local sched_kc="${STATE_DIR}/kube-scheduler.kubeconfig"
  start kube-scheduler "${k8s_dir}/kube-scheduler" \
    --kubeconfig="${sched_kc}" --authentication-kubeconfig="${sched_kc}" --authorization-kubeconfig="${sched_kc}" \
    --leader-elect=false --bind-address=127.0.0.1 --secure-port="${SCHEDULER_PORT}" \
    --cert-dir="${PKI_DIR}/kube-scheduler-generated"
  local kwok_args=(--kubeconfig="${KUBECONFIG_FILE}" --config="${STATE_DIR}/kwok.yaml"
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake
    --node-ip="${KWOK_NODE_IP}" --cidr="${KWOK_POD_CIDR}" --server-address="127.0.0.1:${KWOK_PORT}")
  if [[ "${KWOK_NODE_LEASE_SECONDS}" != 0 ]]; then
    kwok_args+=(--node-lease-duration-seconds="${KWOK_NODE_LEASE_SECONDS}")
  fi
  start kwok "${KWOK_BIN_DIR}/kwok" "${kwok_args[@]}"

  wait_for kube-controller-manager "/healthz" healthz_ok "https://127.0.0.1:${KCM_PORT}/healthz"
  wait_for kube-scheduler "/healthz" healthz_ok "https://127.0.0.1:${SCHEDULER_PORT}/healthz"
  wait_for kwok "/healthz" healthz_ok "http://127.0.0.1:${KWOK_PORT}/healthz"
  wait_for kube-controller-manager "the default ServiceAccount" default_sa_ok
}
