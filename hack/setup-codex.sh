#!/usr/bin/env bash
# setup-codex.sh installs a pinned release of the real OpenAI Codex CLI
# (`@openai/codex`) with npm into a cache outside the repository and prints the
# path of its native binary (use it as CODEX_BIN).
#
# The npm package `@openai/codex` is a JavaScript shim; the native binary lives
# in the platform package it depends on (for Linux x64 the npm alias
# `@openai/codex-linux-x64`, under vendor/x86_64-unknown-linux-musl/bin/codex).
# The script finds that binary by searching the installed tree and checks it
# with `--version`. A second run finds the installation and returns at once.
#
# Usage:
#   hack/setup-codex.sh            install (once) and print the pinned release's binary
#   hack/setup-codex.sh 0.148.0    the same for another release (tests use 0.148.0, the
#                                  newest release below the supported floor 0.149.0)
#
# Environment:
#   HARNESS_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator)
#   CODEX_VERSION      release to install when no argument is given (default 0.169.0)
#
# Only the binary's path goes to stdout; every message goes to stderr.
set -euo pipefail

DEFAULT_VERSION="0.169.0"
VERSION="${1:-${CODEX_VERSION:-${DEFAULT_VERSION}}}"
CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
DEST="${CACHE_ROOT}/codex/${VERSION}"
MARKER="${DEST}/.codex-bin"

log() { echo "setup-codex: $*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $# -le 1 ]] || die "usage: $0 [VERSION]"
[[ "${VERSION}" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
  die "not a release version: ${VERSION}"

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64 | Linux/amd64) TRIPLE_ARCH="x86_64" ;;
  Linux/aarch64 | Linux/arm64) TRIPLE_ARCH="aarch64" ;;
  *) die "unsupported platform $(uname -s)/$(uname -m); only Linux x64 and arm64 are set up" ;;
esac

# check_binary prints the path when $1 is the native Codex binary of VERSION.
check_binary() {
  local bin="$1" out
  [[ -f "${bin}" && -x "${bin}" ]] || return 1
  out="$("${bin}" --version 2>/dev/null)" || return 1
  # `codex --version` prints e.g. "codex-cli 0.169.0".
  [[ "${out}" == "codex-cli ${VERSION}" || "${out}" == *" ${VERSION}" ]] || return 1
  echo "${bin}"
}

# find_binary searches an installed tree for the native executable of this
# platform: a regular file named `codex` (or the older `codex-<triple>`) below
# a vendor directory for <arch>-unknown-linux-*; the JS shim is bin/codex.js
# and never matches.
find_binary() {
  local root="$1" candidate
  while IFS= read -r candidate; do
    if check_binary "${candidate}"; then return 0; fi
  done < <(find "${root}/node_modules" -type f \
    \( -name codex -o -name "codex-${TRIPLE_ARCH}-unknown-linux-*" \) \
    -path "*${TRIPLE_ARCH}-unknown-linux-*" 2>/dev/null | sort)
  return 1
}

# Fast path: already installed and still working.
if [[ -f "${MARKER}" ]]; then
  if bin="$(check_binary "$(cat "${MARKER}")")"; then
    echo "${bin}"
    exit 0
  fi
  log "cached installation in ${DEST} is broken; reinstalling"
fi

command -v npm >/dev/null 2>&1 || die "npm is required (Debian: apt-get install npm)"

mkdir -p "${CACHE_ROOT}/codex"
# Serialize concurrent runs (e.g. parallel make jobs) on one lock per version.
if command -v flock >/dev/null 2>&1; then
  exec 9>"${CACHE_ROOT}/codex/.lock-${VERSION}"
  flock 9
  if [[ -f "${MARKER}" ]] && bin="$(check_binary "$(cat "${MARKER}")")"; then
    echo "${bin}"
    exit 0
  fi
fi

STAGE="$(mktemp -d "${CACHE_ROOT}/codex/.stage-${VERSION}.XXXXXX")"
trap 'rm -rf "${STAGE}"' EXIT

log "installing @openai/codex@${VERSION} with npm into ${DEST} (about 20 s)"
printf '{"name":"harness-operator-codex","private":true}\n' >"${STAGE}/package.json"
# --include=optional: the native binary is an optional dependency.
(cd "${STAGE}" && npm install --no-audit --no-fund --no-save --no-package-lock \
  --include=optional --loglevel=error "@openai/codex@${VERSION}" >&2) ||
  die "npm install @openai/codex@${VERSION} failed"

bin="$(find_binary "${STAGE}")" ||
  die "no native codex ${VERSION} binary for ${TRIPLE_ARCH} Linux found under ${STAGE}/node_modules"

rm -rf "${DEST}"
mv "${STAGE}" "${DEST}"
trap - EXIT
bin="${DEST}${bin#"${STAGE}"}"
bin="$(check_binary "${bin}")" || die "installed binary ${bin} does not report version ${VERSION}"
echo "${bin}" >"${MARKER}"
log "installed $("${bin}" --version)"
echo "${bin}"
