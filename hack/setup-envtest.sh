#!/usr/bin/env bash
# setup-envtest.sh builds the real control-plane binaries from the Go module
# proxy into a cache outside the repository: etcd, and every Kubernetes
# command the project runs (kube-apiserver for envtest; the controller
# manager, scheduler, kubelet, kube-proxy and kubectl for the local cluster)
# in one go build, so they share one compile and link in parallel. It prints
# a directory that holds them all (use it as KUBEBUILDER_ASSETS).
#
# Both upstream modules carry local `replace` directives, so each is built
# through a throwaway wrapper module. Each is cached under its own version
# (k8s/<K8S_VERSION>, etcd/<ETCD_VERSION>), and the printed directory,
# envtest/k8s-<K8S_VERSION>-etcd-<ETCD_VERSION>, hard-links the pair: a bump
# of either version builds that one again. A second run finds the binaries
# and returns at once.
#
# Environment:
#   HARNESS_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator)
#   K8S_VERSION        Kubernetes release to build (default v1.37.2)
#   ETCD_VERSION       etcd release to build (default v3.7.3)
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
CACHE_ROOT="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness-operator}"
BIN_DIR="${CACHE_ROOT}/k8s/${K8S_VERSION}"
ETCD_DIR="${CACHE_ROOT}/etcd/${ETCD_VERSION}"
ASSETS_DIR="${CACHE_ROOT}/envtest/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"
WORK_DIR="${CACHE_ROOT}/build"
K8S_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)

export GOTOOLCHAIN=local
# The Makefile's build configuration (static, path-free): the packages the
# project shares with these builds (client-go, apimachinery, apiserver and
# what they import) are then compiled once, for both.
export GOFLAGS="-buildvcs=false -trimpath" CGO_ENABLED=0
REPO_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { echo "setup-envtest: $*" >&2; }

mkdir -p "${BIN_DIR}" "${ETCD_DIR}" "${ASSETS_DIR}" "${WORK_DIR}"

build_etcd() {
  [[ -x "${ETCD_DIR}/etcd" ]] && return 0
  log "building etcd ${ETCD_VERSION} (about 2 minutes cold)"
  local dir="${WORK_DIR}/etcd-${ETCD_VERSION}"
  rm -rf "${dir}" && mkdir -p "${dir}"
  cat >"${dir}/go.mod" <<MOD
module harnessoperator.local/etcdwrapper

go 1.26.0

require go.etcd.io/etcd/server/v3 ${ETCD_VERSION}
MOD
  cat >"${dir}/tools.go" <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
  (cd "${dir}" && go mod tidy >&2 && go build -o "${ETCD_DIR}/etcd.tmp" go.etcd.io/etcd/server/v3 >&2)
  mv "${ETCD_DIR}/etcd.tmp" "${ETCD_DIR}/etcd"
}

# project_requirements prints the project's module requirements (not the
# k8s.io ones, which the wrapper maps to the release's own tags) as go.mod
# require lines.
project_requirements() {
  (cd "${REPO_DIR}" && go list -m -f '{{if not .Main}}{{.Path}} {{.Version}}{{end}}' all) |
    awk '$1 !~ /^k8s\.io\// && NF == 2 { printf "\t%s %s\n", $1, $2 }'
}

k8s_wrapper() {
  local dir="${WORK_DIR}/k8s-${K8S_VERSION}"
  if [[ -f "${dir}/.ready" ]]; then echo "${dir}"; return 0; fi
  rm -rf "${dir}" && mkdir -p "${dir}"
  local gomod staging_version
  staging_version="v0.${K8S_VERSION#v1.}"
  gomod="$(cd "${dir}" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  [[ -f "${gomod}" ]] || { log "cannot download k8s.io/kubernetes@${K8S_VERSION}"; exit 1; }
  {
    printf 'module harnessoperator.local/k8swrapper\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "${K8S_VERSION}"
    # Every staging module the release requires at v0.0.0 maps to its matching tag.
    grep -E '^[[:space:]]+k8s\.io/[a-z0-9-]+ v0\.0\.0$' "${gomod}" |
      awk -v v="${staging_version}" '{printf "\t%s => %s %s\n", $1, $1, v}'
    printf ')\n'
    # The project's versions of the modules both import, where newer: with
    # the same versions and flags, a package compiled for one is the other's.
    printf '\nrequire (\n'
    project_requirements
    printf ')\n'
  } >"${dir}/go.mod"
  cat >"${dir}/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
GO
  (cd "${dir}" && go mod tidy >&2)
  touch "${dir}/.ready"
  echo "${dir}"
}

build_k8s() {
  local missing=() b
  for b in "${K8S_BINARIES[@]}"; do [[ -x "${BIN_DIR}/${b}" ]] || missing+=("${b}"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  log "building ${missing[*]} ${K8S_VERSION} in one go build (about 15 minutes cold on 2 cores, about a minute with a warm Go build cache)"
  local dir minor ldflags pkgs=() tmp
  dir="$(k8s_wrapper)"
  minor="$(echo "${K8S_VERSION}" | cut -d. -f2)"
  # Without these the server reports v0.0.0-master and clients warn about skew.
  ldflags="-X k8s.io/component-base/version.gitVersion=${K8S_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor} -X k8s.io/component-base/version.gitTreeState=clean -X k8s.io/client-go/pkg/version.gitVersion=${K8S_VERSION} -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=${minor}"
  for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${b}"); done
  tmp="$(mktemp -d "${BIN_DIR}/.build.XXXXXX")"
  # -mod=mod lets an extra command outside tools.go (kubectl) add the go.sum
  # entries it needs to the throwaway wrapper; it changes nothing for the rest.
  (cd "${dir}" && go build -mod=mod -ldflags "${ldflags}" -o "${tmp}/" "${pkgs[@]}" >&2) ||
    { rm -rf "${tmp}"; log "building ${missing[*]} failed"; exit 1; }
  for b in "${missing[@]}"; do mv "${tmp}/${b}" "${BIN_DIR}/${b}"; done
  rmdir "${tmp}"
}

# link_assets hard-links etcd and the Kubernetes binaries into ASSETS_DIR
# (hard links: a process's /proc/PID/exe then names this directory).
link_assets() {
  local src
  for src in "${ETCD_DIR}/etcd" "${K8S_BINARIES[@]/#/${BIN_DIR}/}"; do
    [[ "${ASSETS_DIR}/${src##*/}" -ef "${src}" ]] || ln -f "${src}" "${ASSETS_DIR}/"
  done
}

# One build of each at a time: make deps, the suites and the local cluster
# may ask together; a waiter then finds the binaries.
exec 8>"${ETCD_DIR}/.lock" 9>"${BIN_DIR}/.lock"
flock 8
build_etcd
flock -u 8
flock 9
build_k8s
link_assets
echo "${ASSETS_DIR}"
