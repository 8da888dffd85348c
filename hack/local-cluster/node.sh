# shellcheck shell=bash
# node.sh (sourced by hack/local-cluster.sh) starts and tears down the real
# node: containerd (images imported from LOCAL_CLUSTER_IMAGES_DIR, never
# pulled), kubelet registered as system:node:${NODE_NAME}, kube-proxy in
# iptables mode. Teardown does not need any of them to be alive: it works from
# what is on the machine (cgroups, mounts, processes), so it also cleans up
# after a SIGKILLed run.

# images_env_get KEY: a value from the images directory's images.env
# (KEY=VALUE lines written by `make images`), read, not sourced.
images_env_get() {
  sed -n "s/^$1=//p" "${IMAGES_DIR}/images.env" 2>/dev/null | tail -n1 | tr -d '"'"'"
}

# node_check_images: the archives `make images` wrote exist, with the pause
# image's reference in images.env (checked before anything starts).
node_check_images() {
  local tars=("${IMAGES_DIR}"/*.tar)
  [[ -e "${tars[0]}" ]] ||
    die "no image archives in ${IMAGES_DIR} (run make images, or set LOCAL_CLUSTER_IMAGES_DIR); the node pulls nothing"
  PAUSE_IMAGE="$(images_env_get PAUSE_IMAGE)"
  [[ -n "${PAUSE_IMAGE}" ]] || die "${IMAGES_DIR}/images.env names no PAUSE_IMAGE (the Pod sandbox image)"
}

# normalize_ref prints an image reference as containerd's CRI stores it: a
# name without a registry is on docker.io, one without a path in library/.
normalize_ref() {
  local ref="$1" first="${1%%/*}"
  if [[ "${ref}" != */* ]]; then
    ref="docker.io/library/${ref}"
  elif [[ "${first}" != *.* && "${first}" != *:* && "${first}" != localhost ]]; then
    ref="docker.io/${ref}"
  fi
  echo "${ref}"
}

ctr_k8s() { ctr --address "${CONTAINERD_SOCK}" --namespace k8s.io "$@"; }

containerd_ok() { ctr --address "${CONTAINERD_SOCK}" version; }

# import_images loads every archive, then names each image also by digest
# (<name>@<manifest digest>), as a pull from a registry would: a Pod may then
# reference image@sha256:... as the chart does, and kubelet reports that name
# as the container's imageID. (ctr's --digests would instead add names like
# import-<date>@sha256:..., which is what kubelet would then report.)
import_images() {
  local f n=0 t0=${SECONDS}
  for f in "${IMAGES_DIR}"/*.tar; do
    ctr_k8s images import "${f}" >/dev/null || fail_component containerd "could not import ${f}"
    n=$((n + 1))
  done
  local name digest
  while read -r name digest; do
    ctr_k8s images tag --force "${name}" "${name%:*}@${digest}" >/dev/null ||
      fail_component containerd "could not name ${name} by its digest ${digest}"
  done < <(ctr_k8s images ls | awk 'NR > 1 && $1 !~ /@/ && $1 !~ /^sha256:/ { print $1, $3 }')
  # The list is read whole first: grep -q stopping at the match would SIGPIPE
  # ctr, and pipefail would call the image missing.
  grep -qxF -- "$(normalize_ref "${PAUSE_IMAGE}")" <<<"$(ctr_k8s images ls -q)" ||
    fail_component containerd "the archives in ${IMAGES_DIR} hold no ${PAUSE_IMAGE} (PAUSE_IMAGE in images.env)"
  log "imported ${n} image archives in $((SECONDS - t0))s"
}

# cgroup_roots prints CGROUP_ROOT in every mounted hierarchy (v1 and v2).
cgroup_roots() {
  awk -v r="${CGROUP_ROOT}" '$3 == "cgroup" || $3 == "cgroup2" { print $2 r }' /proc/mounts
}

# make_cgroup_root creates kubelet's --cgroup-root, which must exist. A new
# cpuset cgroup starts without CPUs or memory nodes; it takes its parent's.
make_cgroup_root() {
  local d
  for d in $(cgroup_roots); do
    mkdir -p "${d}"
    if [[ -f "${d}/cpuset.cpus" && -z "$(cat "${d}/cpuset.cpus")" ]]; then
      cat "${d%/*}/cpuset.cpus" >"${d}/cpuset.cpus"
      cat "${d%/*}/cpuset.mems" >"${d}/cpuset.mems"
    fi
  done
}

# node_start: containerd, images, kubelet, kube-proxy; each waited for.
node_start() {
  local k8s_dir="$1"
  write_containerd_config "${PAUSE_IMAGE}"
  write_cni_config
  write_kubelet_config
  write_kube_proxy_config
  start containerd /usr/bin/containerd --config "${CONTAINERD_DIR}/config.toml"
  wait_for containerd "its socket" containerd_ok
  import_images
  make_cgroup_root
  start kubelet "${k8s_dir}/kubelet" --config="${NODE_DIR}/kubelet.yaml" \
    --kubeconfig="${STATE_DIR}/kubelet.kubeconfig" --root-dir="${KUBELET_ROOT}" \
    --node-ip="${NODE_IP}" --hostname-override="${NODE_NAME}"
  start kube-proxy "${k8s_dir}/kube-proxy" --config="${NODE_DIR}/kube-proxy.yaml"
  wait_for kubelet "/healthz" healthz_ok "http://127.0.0.1:${KUBELET_HEALTHZ_PORT}/healthz"
  wait_for kubelet "node ${NODE_NAME} Ready without taints" node_ready "${NODE_NAME}"
  wait_for kube-proxy "/healthz" curl -fsS --max-time 5 "http://127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}/healthz"
}

# kill_pod_processes SIGKILLs every process in the node's cgroups (containers,
# pause, anything they forked) until none is left.
kill_pod_processes() {
  local d pids deadline=$((SECONDS + GRACE))
  while :; do
    pids=""
    for d in $(cgroup_roots); do
      [[ -d "${d}" ]] || continue
      # A Pod's cgroup can vanish while find walks the tree (its last
      # process just died): find then fails, which must not end `down`.
      pids+="$({ find "${d}" -name cgroup.procs -exec cat {} + 2>/dev/null || true; } | tr '\n' ' ')"
    done
    [[ -z "${pids// /}" ]] && return 0
    # shellcheck disable=SC2086 # a list of PIDs
    kill -KILL ${pids} 2>/dev/null || true
    ((SECONDS < deadline)) || { log "warning: processes ${pids} survive SIGKILL"; return 0; }
    sleep 0.2
  done
}

# node_mounts prints every mount point under the state directory, deepest first.
node_mounts() {
  awk -v p="${STATE_DIR}/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo |
    sed 's/\\040/ /g' | sort -r -u
}

unmount_node() {
  local m
  while IFS= read -r m; do
    [[ -n "${m}" ]] || continue
    umount "${m}" 2>/dev/null || umount -l "${m}" 2>/dev/null || log "warning: cannot unmount ${m}"
  done < <(node_mounts)
}

# remove_cgroups removes CGROUP_ROOT's tree in every hierarchy, leaves first.
remove_cgroups() {
  local d
  for d in $(cgroup_roots); do
    [[ -d "${d}" ]] || continue
    find "${d}" -depth -type d -exec rmdir {} + 2>/dev/null ||
      log "warning: cannot remove every cgroup under ${d}"
  done
}

# node_files_cleanup removes what the node left outside the state directory in
# directories that existed before `up` (machine_restore removes the others):
# kubelet's /var/log/containers links into our pod logs; the CNI result cache
# entries of our sandboxes (our network's, and their loopback's); the sockets
# of shims that were killed (containerd names them by the SHA-256 of
# "<containerd socket>/<namespace>/<id>", for the task directories below).
node_files_cleanup() {
  local f id
  for f in /var/log/containers/*.log; do
    [[ -L "${f}" && "$(readlink "${f}")" == "${POD_LOGS_DIR}/"* ]] && rm -f "${f}"
  done
  for f in /var/lib/cni/results/"${CNI_NETWORK}"-*-eth0; do
    [[ -e "${f}" ]] || continue
    id="${f#/var/lib/cni/results/"${CNI_NETWORK}"-}"
    rm -f "${f}" "/var/lib/cni/results/cni-loopback-${id%-eth0}-lo"
  done
  for f in "${CONTAINERD_DIR}"/state/io.containerd.runtime.v2.task/*/*; do
    [[ -d "${f}" ]] || continue
    id="$(printf '%s' "${CONTAINERD_SOCK}/$(basename "$(dirname "${f}")")/$(basename "${f}")" | sha256sum)"
    rm -f "/run/containerd/s/${id%% *}"
  done
}

# node_stop: stop kubelet and kube-proxy, kill the Pods' processes (kubelet
# must be gone first, or it would start them again), stop containerd.
node_stop() {
  stop_group kube-proxy kubelet
  kill_pod_processes
  stop_group containerd
}

# node_cleanup works from what is on the machine, so it also finishes the job
# after a SIGKILL: shims (they outlive containerd by design), Pod processes,
# mounts, cgroups, files outside the state directory, then the node's state.
node_cleanup() {
  local pid
  for pid in $(pgrep -f -- "-address ${CONTAINERD_SOCK}" || true); do
    log "killing containerd shim ${pid}"
    kill -KILL "${pid}" 2>/dev/null || true
  done
  kill_pod_processes
  unmount_node
  remove_cgroups
  node_files_cleanup
  # rm -rf must never descend into something still mounted.
  if [[ -n "$(node_mounts)" ]]; then
    log "warning: mounts remain under ${STATE_DIR} ($(node_mounts | awk 'NR <= 3' | tr '\n' ' ')); ${NODE_DIR} is kept"
  else
    rm -rf "${NODE_DIR}"
  fi
}
