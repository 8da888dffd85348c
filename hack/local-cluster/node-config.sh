# shellcheck shell=bash
# node-config.sh (sourced by hack/local-cluster.sh) writes the configuration of
# the real node's components into ${NODE_DIR}: containerd (with its registry
# hosts), the CNI network, kubelet and kube-proxy. Every path they write to is
# under the state directory; the comments say why each setting is what it is.
# shellcheck disable=SC2153 # the ports and addresses are set by hack/local-cluster.sh

NODE_DIR="${STATE_DIR}/node"
CONTAINERD_DIR="${NODE_DIR}/containerd"
CONTAINERD_SOCK="${CONTAINERD_DIR}/containerd.sock"
KUBELET_ROOT="${NODE_DIR}/kubelet"
POD_LOGS_DIR="${NODE_DIR}/pod-logs"
CNI_CONF_DIR="${NODE_DIR}/cni/net.d"
CNI_IPAM_DIR="${NODE_DIR}/cni/ipam"
CNI_NETWORK=harness-local-cluster
CNI_BIN_DIR=/usr/lib/cni
# kubelet's --cgroup-root: the QoS and pod cgroups live under this one
# directory of each hierarchy, so `down` removes exactly what the node made.
CGROUP_ROOT=/harness-local-cluster

# write_containerd_config SANDBOX_IMAGE
write_containerd_config() {
  mkdir -p "${CONTAINERD_DIR}/certs.d/_default"
  # Every registry resolves to a loopback port where nothing listens: an image
  # that is not imported fails to pull at once instead of leaving the machine.
  cat >"${CONTAINERD_DIR}/certs.d/_default/hosts.toml" <<'TOML'
server = "https://127.0.0.1:9"
[host."https://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
TOML
  cat >"${CONTAINERD_DIR}/config.toml" <<TOML
version = 2
root = "${CONTAINERD_DIR}/root"
state = "${CONTAINERD_DIR}/state"
# opt would create /opt/containerd; the other snapshotters are unused.
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "${CONTAINERD_SOCK}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$1"
  # Root here lacks CAP_SYS_RESOURCE: containers may not get a lower OOM score
  # than containerd's own.
  restrict_oom_score_adj = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # Pod network namespaces are bind-mounted here, not in /run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "${CONTAINERD_DIR}/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${CNI_BIN_DIR}"
    conf_dir = "${CNI_CONF_DIR}"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "${CONTAINERD_DIR}/certs.d"
TOML
}

# write_cni_config: one bridge network on the pod range. No ipMasq (Pods' traffic
# never leaves the machine, so there is nothing to masquerade, and no CNI-*
# chains appear); hairpinMode lets a Pod reach itself through a Service.
write_cni_config() {
  mkdir -p "${CNI_CONF_DIR}" "${CNI_IPAM_DIR}"
  cat >"${CNI_CONF_DIR}/10-${CNI_NETWORK}.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "${CNI_NETWORK}",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "${CNI_IPAM_DIR}",
        "ranges": [[{"subnet": "${POD_CIDR}", "gateway": "${GATEWAY_IP}"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
JSON
}

write_kubelet_config() {
  mkdir -p "${KUBELET_ROOT}" "${POD_LOGS_DIR}"
  cat >"${NODE_DIR}/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT}
tlsCertFile: ${PKI_DIR}/kubelet-serving.crt
tlsPrivateKeyFile: ${PKI_DIR}/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${PKI_DIR}/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://${CONTAINERD_SOCK}
# This machine has cgroup v1 and no systemd.
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupRoot: ${CGROUP_ROOT}
# Without CAP_SYS_RESOURCE kubelet cannot lower its own OOM score.
oomScoreAdj: 0
# kube-proxy makes the chains it needs; kubelet would add KUBE-FIREWALL and a
# canary it keeps recreating.
makeIPTablesUtilChains: false
# Pods get no upstream resolver and there is no cluster DNS.
resolvConf: ""
podLogsDir: ${POD_LOGS_DIR}
# Images are imported, never pulled, and must not be collected.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
failSwapOn: false
serializeImagePulls: false
YAML
}

write_kube_proxy_config() {
  cat >"${NODE_DIR}/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${STATE_DIR}/kube-proxy.kubeconfig
hostnameOverride: ${NODE_NAME}
bindAddress: ${NODE_IP}
healthzBindAddress: 127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}
metricsBindAddress: 127.0.0.1:${KUBE_PROXY_METRICS_PORT}
mode: iptables
clusterCIDR: ${POD_CIDR}
# NodePorts only on the gateway address: kube-proxy then neither needs
# route_localnet nor listens anywhere else.
nodePortAddresses: ["${GATEWAY_IP}/32"]
iptables:
  localhostNodePorts: false
  # Every Service connection is SNATed to the gateway, so replies come back
  # through the host even where br_netfilter does not see bridged traffic
  # (Pod -> Service -> Pod on the same bridge).
  masqueradeAll: true
oomScoreAdj: 0
# Zero means "leave the sysctl alone": kube-proxy changes no conntrack setting.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
  tcpBeLiberal: false
  udpTimeout: 0s
  udpStreamTimeout: 0s
YAML
}
