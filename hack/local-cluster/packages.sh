# shellcheck shell=bash
# packages.sh (sourced by hack/local-cluster.sh) installs the Debian packages of
# the real node (containerd, runc, the CNI plugins, iptables, nftables) at the
# versions pinned in debian.lock, when they are missing. Installed once, they
# stay: a second `up` only reads dpkg's database.

LOCK_FILE="${HACK_DIR}/local-cluster/debian.lock"
LOCK_REFRESH="hack/local-cluster/debian-lock.sh > hack/local-cluster/debian.lock"

# pin_available PKG VERSION: apt offers exactly this version.
pin_available() {
  apt-cache madison "$1" 2>/dev/null | awk -F'|' -v want="$2" '{ gsub(/ /, "", $2); if ($2 == want) found = 1 } END { exit !found }'
}

# missing_pins prints PKG=VERSION for each pin apt does not offer.
missing_pins() {
  local pin
  for pin in "$@"; do pin_available "${pin%%=*}" "${pin#*=}" || echo "${pin}"; done
}

# ensure_node_packages installs each pinned package that is not installed. A
# node package installed at another version is an error (the cluster was tested
# with the pinned one); a dependency at another version is left alone.
ensure_node_packages() {
  local line pkg want have section=node
  local -a install=()
  [[ -f "${LOCK_FILE}" ]] || die "${LOCK_FILE} is missing"
  while IFS= read -r line; do
    [[ "${line}" == "# dependencies" ]] && { section=deps; continue; }
    [[ -z "${line}" || "${line}" == \#* ]] && continue
    pkg="${line%%=*}" want="${line#*=}"
    have="$(dpkg-query -W -f='${db:Status-Status} ${Version}' "${pkg}" 2>/dev/null || true)"
    [[ "${have}" == "installed ${want}" ]] && continue
    if [[ "${have}" == installed\ * ]]; then
      [[ "${section}" == deps ]] && continue
      die "${pkg} ${have#installed } is installed but ${LOCK_FILE} pins ${want}; install the pin (apt-get install ${pkg}=${want}) or, to move to Debian's current version, refresh the lock: ${LOCK_REFRESH}"
    fi
    install+=("${pkg}=${want}")
  done <"${LOCK_FILE}"
  ((${#install[@]} > 0)) || return 0
  [[ ${EUID} -eq 0 ]] || die "installing ${install[*]} needs root"
  command -v apt-get >/dev/null || die "installing ${install[*]} needs apt-get (Debian bookworm)"
  local unavailable
  unavailable="$(missing_pins "${install[@]}")"
  if [[ -n "${unavailable}" ]]; then
    log "apt does not offer ${unavailable//$'\n'/ }; running apt-get update"
    apt-get update -qq >&2 || die "apt-get update failed"
    unavailable="$(missing_pins "${install[@]}")"
    [[ -z "${unavailable}" ]] || die "Debian no longer offers ${unavailable//$'\n'/ } (pinned in ${LOCK_FILE}); refresh the lock: apt-get update && ${LOCK_REFRESH}"
  fi
  log "installing ${install[*]}"
  local t0=${SECONDS}
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${install[@]}" >&2 ||
    die "apt-get install ${install[*]} failed"
  log "installed the node's Debian packages in $((SECONDS - t0))s"
}
