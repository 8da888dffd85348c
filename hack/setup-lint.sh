#!/usr/bin/env bash
# setup-lint.sh builds the linters into the cache outside the repository,
# once each, and prints a binary's path:
#
#   hack/setup-lint.sh             golangci-lint with the Kube API Linter module
#                                  compiled in (kube-api-linter's own
#                                  cmd/golangci-lint-kube-api-linter)
#   hack/setup-lint.sh actionlint  actionlint, for the release workflow
#
# Each is cached under its version, so a warm `make lint` asks no registry.
set -euo pipefail

KAL_VERSION="${KAL_VERSION:-v0.0.0-20260716143926-092fe0c72997}"
ACTIONLINT_VERSION="${ACTIONLINT_VERSION:-v1.7.12}"
CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"

export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false

case "${1:-golangci-lint}" in
  golangci-lint)
    BIN_DIR="${CACHE_ROOT}/lint/${KAL_VERSION}"
    BIN="${BIN_DIR}/golangci-lint-kube-api-linter"
    PKG="sigs.k8s.io/kube-api-linter/cmd/golangci-lint-kube-api-linter@${KAL_VERSION}"
    WHAT="golangci-lint with kube-api-linter ${KAL_VERSION} (about 2 minutes cold)"
    ;;
  actionlint)
    BIN_DIR="${CACHE_ROOT}/actionlint/${ACTIONLINT_VERSION}"
    BIN="${BIN_DIR}/actionlint"
    PKG="github.com/rhysd/actionlint/cmd/actionlint@${ACTIONLINT_VERSION}"
    WHAT="actionlint ${ACTIONLINT_VERSION} (seconds)"
    ;;
  *)
    echo "usage: $0 [golangci-lint|actionlint]" >&2
    exit 2
    ;;
esac

mkdir -p "${BIN_DIR}"
# One build at a time (make deps and make lint may run together).
exec 9>"${BIN_DIR}/.lock"
flock 9
if [[ ! -x "${BIN}" ]]; then
  echo "setup-lint: building ${WHAT}" >&2
  GOBIN="${BIN_DIR}" go install "${PKG}" >&2
fi
echo "${BIN}"
