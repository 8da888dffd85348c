#!/usr/bin/env bash
# debian-lock.sh prints a fresh hack/local-cluster/debian.lock: the Debian
# packages the real node of the local cluster uses, at the versions apt offers
# now, then every package they depend on (recursively) except the C runtime
# every Debian system has. Run `apt-get update` first.
#
# Usage: hack/local-cluster/debian-lock.sh > hack/local-cluster/debian.lock
set -euo pipefail

# What the node runs: the container runtime and its OCI runtime, the CNI
# plugins (bridge, host-local, loopback), iptables for kube-proxy and the
# firewall rule, nftables to remove the tables iptables-nft creates, ipset
# for kube-router's NetworkPolicy firewall.
NODE_PACKAGES=(containerd runc containernetworking-plugins iptables nftables ipset)
# Part of every Debian system; pinning them would only make the lock stale.
BASE_PACKAGES=" libc6 libgcc-s1 gcc-12-base "

candidate() {
  local v
  v="$(apt-cache policy "$1" | sed -n 's/^ *Candidate: //p')"
  [[ -n "${v}" && "${v}" != "(none)" ]] || { echo "debian-lock: apt offers no $1 (apt-get update?)" >&2; exit 1; }
  echo "$1=${v}"
}

cat <<'HEADER'
# Debian bookworm packages of the local cluster's real node, pinned.
# hack/local-cluster.sh up installs what is missing with apt-get install pkg=version
# (no recommends). Refresh: hack/local-cluster/debian-lock.sh > hack/local-cluster/debian.lock
# Above "# dependencies": what the node uses (installed at another version is an
# error). Below: what they depend on (installed at another version is left alone).
HEADER
for p in "${NODE_PACKAGES[@]}"; do candidate "${p}"; done
echo "# dependencies"
apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances "${NODE_PACKAGES[@]}" | grep -v '^[ <]' | sort -u |
  while read -r p; do
    [[ " ${NODE_PACKAGES[*]} " == *" ${p} "* || "${BASE_PACKAGES}" == *" ${p} "* ]] && continue
    candidate "${p}"
  done
