#!/usr/bin/env bash
# at-fixed-path.sh CMD [ARG...] runs CMD in the repository as seen at one
# fixed path, the same for every clone: golangci-lint keys its cache on each
# file's absolute path as well as its content, so a fresh clone at a new
# path would lint everything again (minutes) where the same content at the
# same path reuses the last run's results (seconds).
#
# As root it bind-mounts the repository over an empty directory in the
# project's cache, in a mount namespace of its own: the mount exists only
# for CMD and ends with it, and the results the cache holds name files of
# the checkout being linted, never of an older clone. Without root (or
# unshare) it runs CMD where the repository is.
set -euo pipefail

CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
repo="$(git rev-parse --show-toplevel 2>/dev/null || pwd -P)"
rel="$(realpath --relative-to="${repo}" "$(pwd -P)")"

if [[ "$(id -u)" != 0 ]] || ! command -v unshare >/dev/null; then
  exec "$@"
fi
fixed="${CACHE_ROOT}/fixed-path/repo"
mkdir -p "${fixed}"
# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare --mount --propagation private -- bash -euc '
  mount --bind "$1" "$2"
  cd "$2/$3"
  shift 3
  exec "$@"' at-fixed-path "${repo}" "${fixed}" "${rel}" "$@"
