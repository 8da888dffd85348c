#!/usr/bin/env bash
# setup-lint.sh builds golangci-lint with the Kube API Linter module compiled in
# (kube-api-linter's own cmd/golangci-lint-kube-api-linter) from the Go module
# proxy into the cache outside the repository, once, and prints the binary's path.
set -euo pipefail

KAL_VERSION="${KAL_VERSION:-v0.0.0-20260716143926-092fe0c72997}"
CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
BIN_DIR="${CACHE_ROOT}/lint/${KAL_VERSION}"
BIN="${BIN_DIR}/golangci-lint-kube-api-linter"

export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false

mkdir -p "${BIN_DIR}"
# One build at a time (make deps and make lint may run together).
exec 9>"${BIN_DIR}/.lock"
flock 9
if [[ ! -x "${BIN}" ]]; then
  echo "setup-lint: building golangci-lint with kube-api-linter ${KAL_VERSION} (about 2 minutes cold)" >&2
  mkdir -p "${BIN_DIR}"
  GOBIN="${BIN_DIR}" go install "sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter@${KAL_VERSION}" >&2
fi
echo "${BIN}"
