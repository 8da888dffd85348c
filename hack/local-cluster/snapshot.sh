#!/usr/bin/env bash
# snapshot.sh prints the machine state the local cluster's real node touches,
# normalized so that two snapshots of an unchanged machine are equal: take one
# before `hack/local-cluster.sh up` and one after `down`, and diff them.
#
# Sections: the sysctls kubelet, kube-proxy and the CNI plugins may write;
# iptables (nft and legacy, IPv4 and IPv6) without counters and timestamps; the
# nftables ruleset without counters; the names of ipsets; links, addresses, routes (all tables) and
# rules; network namespaces; mounts; cgroup directories, first level only (the
# node makes everything under one of them, and a launcher's per-session cgroups
# come and go below its own); the directories the node may create outside its
# state directory; listening sockets; long-running processes.
#
# Processes and sockets: kernel threads, and every process tree started by the
# same kind of launcher as the one this snapshot runs under (the caller's own
# session and sibling sessions, e.g. every shell of a CI runner or of sshd),
# including their background jobs, are transient and left out. What remains is
# PID 1 and the daemons in sessions of their own: a process the cluster leaks
# (its components are started in their own session and outlive `up`) is there.
#
# Usage: hack/local-cluster/snapshot.sh > before.txt
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck disable=SC2034 # machine.sh, sourced below, derives its paths from it
STATE_DIR="${LOCAL_CLUSTER_DIR:-$(cd "${HACK_DIR}/.." && pwd)/.local/cluster}"
log() { echo "snapshot: $*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=/dev/null
source "${HACK_DIR}/local-cluster/machine.sh"

section() { printf '\n== %s\n' "$1"; }

sysctls() {
  local k
  while read -r k; do
    printf '%s=%s\n' "${k}" "$(sysctl -n "${k}" 2>/dev/null || echo '<absent>')"
  done < <(node_sysctls)
  echo "nf_conntrack hashsize=$(cat /sys/module/nf_conntrack/parameters/hashsize 2>/dev/null || echo '<absent>')"
}

# iptables_state: each save tool that exists, without comments (timestamps),
# and with chain counters zeroed.
# A tool's section is printed only when it has rules: an empty ruleset is
# the same machine state as no tool at all, and the first `up` on a new
# machine installs the tools (between the two snapshots of test-e2e).
iptables_state() {
  local t rules
  for t in iptables-nft-save ip6tables-nft-save iptables-legacy-save ip6tables-legacy-save; do
    command -v "${t}" >/dev/null || continue
    rules="$("${t}" 2>/dev/null | sed -E '/^#/d; s/ \[[0-9]+:[0-9]+\]$//')"
    [[ -n "${rules}" ]] && printf -- '-- %s\n%s\n' "${t}" "${rules}"
  done
  if command -v nft >/dev/null; then
    rules="$(nft list ruleset 2>/dev/null | sed -E 's/counter packets [0-9]+ bytes [0-9]+/counter/')"
    [[ -n "${rules}" ]] && printf -- '-- nft list ruleset\n%s\n' "${rules}"
  fi
  # kube-router's ipsets (printed only when there are any, for the same reason).
  if command -v ipset >/dev/null; then
    rules="$(ipset list -n 2>/dev/null | sort)"
    [[ -n "${rules}" ]] && printf -- '-- ipset list -n\n%s\n' "${rules}"
  fi
  return 0
}

network_state() {
  section "links"
  ip -o link | sed -E 's/^[0-9]+: //; s/\\ +/ /g'
  section "addresses"
  ip -o addr | sed -E 's/^[0-9]+: //; s/\\ +/ /g; s/valid_lft [^ ]+ preferred_lft [^ ]+//'
  section "routes (all tables)"
  ip -4 route show table all
  ip -6 route show table all | sed -E 's/ expires [0-9]+sec//'
  section "rules"
  ip -4 rule
  ip -6 rule
  section "network namespaces"
  ip netns list
  ls -A /run/netns 2>/dev/null || true
}

# mounts: mount point, type and source; IDs and peer groups change with every
# boot-time ordering and say nothing about what is mounted.
mounts() {
  awk '{ for (i = 7; $i != "-"; i++); print $5, $(i + 1), $(i + 2) }' /proc/self/mountinfo | sort
}

cgroups() {
  local m
  awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/mounts | sort | while read -r m; do
    (cd "${m}" && find . -mindepth 1 -maxdepth 1 -type d | sed "s|^\.|${m}|" | sort)
  done
}

paths() {
  local p
  for p in "${NODE_PATHS[@]}" /run/netns /opt/containerd /var/lib/containerd /etc/cni /var/log/pods; do
    if [[ -e "${p}" ]]; then
      echo "${p}: present, $(find "${p}" -mindepth 1 2>/dev/null | wc -l) entries"
    else
      echo "${p}: absent"
    fi
  done
}

# process_table prints "PID transient|kept COMM" for every process, from one
# ps run. Transient: kernel threads; this snapshot's own tree; every tree rooted
# at a child of PID 1 whose command is that of the tree this snapshot runs in
# (the session launchers); and every process in a session of those trees (a
# background job of a session is reparented to PID 1 but keeps its session).
# So are zombies: they have exited and only wait for PID 1 to reap them (which
# can take seconds). The cluster starts each component in a session of its
# own, so what it leaks is never transient.
process_table() {
  ps -eo pid=,ppid=,sid=,stat=,comm= | awk -v self=$$ '
    { pid = $1; ppid[pid] = $2; sid[pid] = $3; zombie[pid] = ($4 ~ /^Z/); c = $5; for (i = 6; i <= NF; i++) c = c " " $i; comm[pid] = c; kids[$2] = kids[$2] " " pid }
    function mark(p,   n, k, a) { out[p] = 1; n = split(kids[p], a, " "); for (k = 1; k <= n; k++) mark(a[k]) }
    END {
      top = self
      while (top in ppid && ppid[top] != 1 && ppid[top] != 0) top = ppid[top]
      if (ppid[top] == 1) launcher = comm[top]
      mark(2)
      for (p in ppid) if (ppid[p] == 1 && launcher != "" && comm[p] == launcher) mark(p)
      mark(self)
      for (p in out) if (sid[p] > 1) tsid[sid[p]] = 1
      for (p in ppid) if (sid[p] in tsid) mark(p)
      for (p in ppid) if (p != 2) print p, ((p in out || zombie[p]) ? "transient" : "kept"), comm[p]
    }'
}

processes() {
  process_table | awk '$2 == "kept" { $1 = $2 = ""; sub(/^  /, ""); print }' | sort | uniq -c | sed -E 's/^ +//'
}

# sockets: protocol, local address and owner's name, without PIDs and fds.
sockets() {
  local skip="$1"
  ss -Hltunp | awk -v skip="${skip}" 'BEGIN { n = split(skip, a, " "); for (i = 1; i <= n; i++) s[a[i]] = 1 }
    {
      owner = ""; pid = ""
      if (match($0, /users:\(\("[^"]*",pid=[0-9]+/)) {
        u = substr($0, RSTART, RLENGTH); split(u, f, "\""); owner = f[2]; sub(/.*pid=/, "", u); pid = u
      }
      if (pid != "" && (pid in s)) next
      print $1, $5, owner
    }' | sort -u
}

main() {
  [[ ${EUID} -eq 0 ]] || die "run as root (iptables, ss -p and nft need it)"
  section "sysctls"
  sysctls
  section "iptables"
  iptables_state
  network_state
  section "mounts"
  mounts
  section "cgroups (first level)"
  cgroups
  section "paths the node may create"
  paths
  section "listening sockets"
  sockets "$(process_table | awk '$2 == "transient" { printf "%s ", $1 }')"
  section "processes (comm, count)"
  processes
}

main "$@"
