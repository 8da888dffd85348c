#!/usr/bin/env bash
# setup-helm.sh builds a pinned release of the real Helm CLI from the Go module
# proxy into a cache outside the repository and prints the binary's path (use it
# as HELM_BIN for the chart tests under test/e2e/chart).
#
# `go install helm.sh/helm/v3/cmd/helm@VERSION` builds in module mode with
# Helm's own go.mod. Helm's release build stamps its version and the Kubernetes
# version `helm template` and `helm lint` assume without a cluster (from the
# client-go it is built with; unstamped it is v1.20, which fails charts with a
# newer kubeVersion constraint). The ldflags below do the same, so the binary
# behaves as an official one. The
# build goes into a temporary directory and is moved into place only when it
# finished and reports the expected version, so an interrupted build is never
# taken as cached. A second run finds the binary and returns at once.
#
# Environment:
#   HARNESS_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator)
#   HELM_VERSION       release to build (default v3.22.0)
#   HELM_K8S_MINOR     Kubernetes minor version the build assumes offline (default 37,
#                      matching the client-go of v3.22.0)
#
# Only the binary's path goes to stdout; every message goes to stderr.
set -euo pipefail

HELM_VERSION="${HELM_VERSION:-v3.22.0}"
CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
BIN_DIR="${CACHE_ROOT}/helm/${HELM_VERSION}"
BIN="${BIN_DIR}/helm"

export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false

log() { echo "setup-helm: $*" >&2; }
die() { log "error: $*"; exit 1; }

[[ "${HELM_VERSION}" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || die "not a Helm 3 release version: ${HELM_VERSION}"

if [[ -x "${BIN}" ]]; then
  echo "${BIN}"
  exit 0
fi

mkdir -p "${BIN_DIR}"
# One build at a time (make deps runs the set-up scripts in parallel with
# the suites' own calls); a waiter then finds the binary.
exec 9>"${BIN_DIR}/.lock"
flock 9
if [[ -x "${BIN}" ]]; then
  echo "${BIN}"
  exit 0
fi
tmp="$(mktemp -d "${BIN_DIR}/.build.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

log "building helm ${HELM_VERSION} (about 2-3 minutes cold)"
# Helm v3.22 is built with client-go v0.37 (Kubernetes 1.37).
HELM_K8S_MINOR="${HELM_K8S_MINOR:-37}"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${HELM_K8S_MINOR}"
GOBIN="${tmp}" go install -ldflags "${ldflags}" "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}" >&2

got="$("${tmp}/helm" version --template '{{.Version}}')"
[[ "${got}" == "${HELM_VERSION}" ]] ||
  die "built helm reports version ${got}, want ${HELM_VERSION} (the ldflags variable may have moved)"

mv "${tmp}/helm" "${BIN}"
log "helm ${HELM_VERSION} ready"
echo "${BIN}"
