#!/usr/bin/env bash
# check-reproducible.sh builds every image twice, each time from empty build
# caches (a fresh GOCACHE and a fresh layer cache), into two directories, and
# fails unless both builds give the same digests. The downloads (Debian
# packages, the Codex package, Go modules) are shared: they are inputs,
# verified against their pins, not build state.
#
# Usage: hack/images/check-reproducible.sh [extra hack/images flags]   (make images-reproducible)
set -euo pipefail

CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/images-reproducible.XXXXXX")"
trap 'rm -rf "${WORK}"' EXIT

# Fill the download caches once, so both builds read the same inputs.
hack/setup-codex.sh >/dev/null
go run ./hack/images -out "${WORK}/warmup" "$@" >/dev/null 2>&1 ||
  go run ./hack/images -out "${WORK}/warmup" "$@"

for run in a b; do
  cache="${WORK}/cache-${run}"
  mkdir -p "${cache}/images"
  ln -s "${CACHE_ROOT}/codex" "${cache}/codex"
  for shared in apt debs codex; do
    [[ -e "${CACHE_ROOT}/images/${shared}" ]] && ln -s "${CACHE_ROOT}/images/${shared}" "${cache}/images/${shared}"
  done
  echo "check-reproducible: build ${run} (empty GOCACHE and layer cache)" >&2
  start=${SECONDS}
  GOCACHE="${WORK}/gocache-${run}" HARNESS_CACHE_DIR="${cache}" \
    go run ./hack/images -out "${WORK}/out-${run}" "$@"
  echo "check-reproducible: build ${run} took $((SECONDS - start)) s" >&2
done

if ! diff -u "${WORK}/out-a/images.env" "${WORK}/out-b/images.env"; then
  echo "check-reproducible: FAIL: the two builds differ" >&2
  exit 1
fi
for tar in "${WORK}"/out-a/*.tar; do
  cmp "${tar}" "${WORK}/out-b/$(basename "${tar}")"
done
echo "check-reproducible: OK: equal digests and byte-identical archives" >&2
cat "${WORK}/out-a/images.env"
