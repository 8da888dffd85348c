#!/usr/bin/env bash
# setup-envtest.sh builds the real control-plane binaries and the project's
# other Kubernetes tools from the Go module proxy into a cache outside the
# repository: etcd, every Kubernetes command the project runs (kube-apiserver
# for envtest; the controller manager, scheduler, kubelet, kube-proxy and
# kubectl for the local cluster) and Helm (the chart tests), in one go build.
# It prints the directory that holds them all (use it as KUBEBUILDER_ASSETS;
# hack/setup-helm.sh prints the helm in it).
#
# One build, because the tools share most of their code: Helm is client-go,
# apimachinery, cli-runtime and kubectl's libraries, and etcd's server is
# mostly the gRPC, protobuf and OpenTelemetry modules kube-apiserver links
# too. Built together, in one module graph and with the Makefile's build
# configuration, each shared package compiles once for all of them, and for
# the project's own builds too (below). The upstream modules carry local
# `replace` directives, so they are built through a throwaway wrapper module
# that requires the three releases and maps Kubernetes' staging modules to
# the release's tags. The cache directory, tools/<TOOLS_KEY>
# (hack/tool-versions.sh: k8s-<K8S_VERSION>-etcd-<ETCD_VERSION>-helm-<HELM_VERSION>),
# names every version, so a bump of any builds them again; a second run finds
# the binaries and returns at once.
#
# Environment:
#   HARNESS_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator)
#   K8S_VERSION, ETCD_VERSION, HELM_VERSION  the releases (hack/tool-versions.sh)
#
# Only the directory goes to stdout; every message goes to stderr.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "${HACK_DIR}/.." && pwd)"
# shellcheck source=tool-versions.sh
source "${HACK_DIR}/tool-versions.sh"
CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
BIN_DIR="${CACHE_ROOT}/tools/${TOOLS_KEY}"
WRAPPER_DIR="${CACHE_ROOT}/build/tools-${TOOLS_KEY}"
K8S_COMMANDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
BINARIES=(etcd "${K8S_COMMANDS[@]}" helm)

# package_of prints the Go package a binary is built from.
package_of() {
  case "$1" in
    etcd) echo go.etcd.io/etcd/server/v3 ;;
    helm) echo helm.sh/helm/v3/cmd/helm ;;
    *) echo "k8s.io/kubernetes/cmd/$1" ;;
  esac
}

export GOTOOLCHAIN=local
# The Makefile's build configuration (static, path-free): the packages the
# project shares with these builds (client-go, apimachinery, apiserver, gRPC
# and what they import) are then compiled once, for both.
export GOFLAGS="-buildvcs=false -trimpath" CGO_ENABLED=0

log() { echo "setup-envtest: $*" >&2; }
die() { log "error: $*"; exit 1; }

[[ "${HELM_VERSION}" =~ ^v3\.[0-9]+\.[0-9]+$ ]] || die "not a Helm 3 release version: HELM_VERSION=${HELM_VERSION}"

# project_requirements prints the project's module requirements (not the
# k8s.io ones, which the wrapper maps to the release's own tags) as go.mod
# require lines: where they are newer, the tools are built with the
# project's versions, so that a package compiled for one is the other's.
project_requirements() {
  (cd "${REPO_DIR}" && go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all) |
    awk '$1 !~ /^k8s\.io\// && NF == 2 { printf "\t%s %s\n", $1, $2 }'
}

# report_raised names the modules the tools need at a newer version than the
# project's go.mod, among those the project builds packages of: the project
# then compiles those, and everything that imports them, once more. `go get`
# them in the project to share again.
report_raised() {
  local raised="" module ours theirs
  while read -r module ours theirs; do
    if [[ "$(printf '%s\n%s\n' "${ours}" "${theirs}" | sort -V | tail -n1)" == "${theirs}" ]]; then
      raised+=" ${module} ${ours} -> ${theirs};"
    fi
  done < <(LC_ALL=C join \
    <(cd "${REPO_DIR}" && go list -deps -test -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{end}}{{end}}' ./... | LC_ALL=C sort -u) \
    <(cd "${WRAPPER_DIR}" && go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all | LC_ALL=C sort) |
    awk '$1 !~ /^k8s\.io\// && $2 != $3')
  [[ -z "${raised}" ]] ||
    log "the tools need newer modules than the project's go.mod, so these and what imports them compile twice:${raised} go get them in the project to share them"
}

# wrapper writes (once) the module the tools are built in.
wrapper() {
  [[ -f "${WRAPPER_DIR}/.ready" ]] && return 0
  rm -rf "${WRAPPER_DIR}" && mkdir -p "${WRAPPER_DIR}"
  local gomod staging_version
  staging_version="v0.${K8S_VERSION#v1.}"
  gomod="$(cd "${WRAPPER_DIR}" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  [[ -f "${gomod}" ]] || die "cannot download k8s.io/kubernetes@${K8S_VERSION}"
  {
    printf 'module harnessoperator.local/toolswrapper\n\ngo 1.26.0\n\n'
    printf 'require (\n\tk8s.io/kubernetes %s\n\tgo.etcd.io/etcd/server/v3 %s\n\thelm.sh/helm/v3 %s\n)\n\nreplace (\n' \
      "${K8S_VERSION}" "${ETCD_VERSION}" "${HELM_VERSION}"
    # Every staging module the release requires at v0.0.0 maps to its
    # matching tag (Helm's k8s.io requirements included).
    grep -E '^[[:space:]]+k8s\.io/[a-z0-9-]+ v0\.0\.0$' "${gomod}" |
      awk -v v="${staging_version}" '{printf "\t%s => %s %s\n", $1, $1, v}'
    printf ')\n\nrequire (\n'
    project_requirements
    printf ')\n'
  } >"${WRAPPER_DIR}/go.mod"
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    local b
    for b in "${BINARIES[@]}"; do printf '\t_ "%s"\n' "$(package_of "${b}")"; done
    printf ')\n'
  } >"${WRAPPER_DIR}/tools.go"
  (cd "${WRAPPER_DIR}" && go mod tidy >&2) || die "go mod tidy in ${WRAPPER_DIR} failed"
  report_raised
  touch "${WRAPPER_DIR}/.ready"
}

build() {
  local missing=() b
  for b in "${BINARIES[@]}"; do [[ -x "${BIN_DIR}/${b}" ]] || missing+=("${b}"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  wrapper
  log "building ${missing[*]} (${TOOLS_KEY}) in one go build (about 20 minutes with empty caches on 2 cores, a minute with a warm Go build cache)"
  local minor ldflags pkgs=() tmp
  minor="$(echo "${K8S_VERSION}" | cut -d. -f2)"
  # -s -w as the releases link. The -X flags stamp versions as the releases
  # do (each binary takes those of its own packages): without them
  # Kubernetes reports v0.0.0-master and clients warn about skew, and Helm
  # assumes Kubernetes v1.20 offline, which fails charts with a newer
  # kubeVersion constraint.
  ldflags="-s -w"
  ldflags+=" -X k8s.io/component-base/version.gitVersion=${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${minor}"
  ldflags+=" -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  ldflags+=" -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${minor}"
  for b in "${missing[@]}"; do pkgs+=("$(package_of "${b}")"); done
  tmp="$(mktemp -d "${BIN_DIR}/.build.XXXXXX")"
  (cd "${WRAPPER_DIR}" && go build -ldflags "${ldflags}" -o "${tmp}/" "${pkgs[@]}" >&2) ||
    { rm -rf "${tmp}"; die "building ${missing[*]} failed"; }
  # go build names etcd's server after its path without the major version.
  [[ -x "${tmp}/server" ]] && mv "${tmp}/server" "${tmp}/etcd"
  if [[ -x "${tmp}/helm" ]]; then
    local got
    got="$("${tmp}/helm" version --template '{{.Version}}')"
    [[ "${got}" == "${HELM_VERSION}" ]] ||
      { rm -rf "${tmp}"; die "the built helm reports version ${got}, want ${HELM_VERSION} (its version variable may have moved)"; }
  fi
  for b in "${missing[@]}"; do mv "${tmp}/${b}" "${BIN_DIR}/${b}"; done
  rmdir "${tmp}"
}

# One build at a time: make deps, the suites and the local cluster may ask
# together; a waiter then finds the binaries.
mkdir -p "${BIN_DIR}"
exec 9>"${BIN_DIR}/.lock"
flock 9
build
echo "${BIN_DIR}"
