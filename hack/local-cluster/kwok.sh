#!/usr/bin/env bash
# kwok.sh is sourced by hack/local-cluster.sh: KWOK, which plays the kubelet of
# the fake node kwok-node-0 — its build (against the cluster's own k8s.io
# modules) and its stage configuration.
# shellcheck shell=bash

# build_kwok builds kwok into KWOK_BIN_DIR once. KWOK_BUILD=shared (default)
# builds it in a copy of setup-envtest.sh's wrapper module, so kwok links
# the very k8s.io/* packages (v0.37.x for v1.37.x) kube-controller-manager was
# just compiled from: the Go build cache already holds them, and kwok costs
# about 15 s instead of 2.5-4 minutes. KWOK_BUILD=install runs `go install`,
# which builds kwok with its own dependency set (k8s.io/* v0.36 for v0.8.0).
build_kwok() {
  [[ -x "${KWOK_BIN_DIR}/kwok" ]] && return 0
  mkdir -p "${KWOK_BIN_DIR}"
  local tmp tools_wrapper="${CACHE_ROOT}/build/tools-${TOOLS_KEY}"
  tmp="$(mktemp -d "${KWOK_BIN_DIR}/.build.XXXXXX")"
  if [[ "${KWOK_BUILD:-shared}" == shared && -f "${tools_wrapper}/.ready" ]]; then
    log "building kwok ${KWOK_VERSION} in the module graph of ${TOOLS_KEY}"
    local dir="${CACHE_ROOT}/build/kwok-${KWOK_VERSION}-${TOOLS_KEY}"
    rm -rf "${dir}" && mkdir -p "${dir}"
    # The same requirements and replaces as the tools' wrapper, plus kwok:
    # equal module versions are what lets the build cache be shared.
    sed 's|^module .*|module harnessoperator.local/kwokwrapper|' "${tools_wrapper}/go.mod" >"${dir}/go.mod"
    cp "${tools_wrapper}/go.sum" "${tools_wrapper}/tools.go" "${dir}/"
    printf '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/kwok/cmd/kwok"\n' >"${dir}/kwok.go"
    (cd "${dir}" && go get "sigs.k8s.io/kwok@${KWOK_VERSION}" >&2 && go mod tidy >&2 &&
      go build -ldflags "-s -w" -o "${tmp}/kwok" sigs.k8s.io/kwok/cmd/kwok >&2) ||
      { rm -rf "${tmp}"; die "building kwok ${KWOK_VERSION} failed (KWOK_BUILD=install uses go install instead)"; }
  else
    log "building kwok ${KWOK_VERSION} with go install (about 2.5 minutes cold)"
    GOBIN="${tmp}" go install "sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION}" >&2 ||
      { rm -rf "${tmp}"; die "go install sigs.k8s.io/kwok/cmd/kwok@${KWOK_VERSION} failed"; }
  fi
  mv "${tmp}/kwok" "${KWOK_BIN_DIR}/kwok"
  rmdir "${tmp}"
}

kwok_module_dir() {
  local dir
  dir="$(cd "${CACHE_ROOT}" && go mod download -json "sigs.k8s.io/kwok@${KWOK_VERSION}" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')"
  [[ -d "${dir}" ]] || die "cannot download sigs.k8s.io/kwok@${KWOK_VERSION}"
  echo "${dir}"
}

write_kwok_config() {
  local mod heartbeat
  mod="$(kwok_module_dir)"
  heartbeat="kustomize/stage/node/heartbeat/node-heartbeat.yaml"
  if [[ "${KWOK_NODE_LEASE_SECONDS}" != 0 ]]; then
    heartbeat="kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml"
  fi
  # The stages ship with the pinned module, so they follow KWOK_VERSION.
  local f first=1
  for f in kustomize/stage/node/fast/node-initialize.yaml "${heartbeat}" \
    kustomize/stage/pod/fast/pod-ready.yaml kustomize/stage/pod/fast/pod-complete.yaml \
    kustomize/stage/pod/fast/pod-delete.yaml; do
    [[ -f "${mod}/${f}" ]] || die "kwok ${KWOK_VERSION} has no ${f}"
    ((first)) || echo "---"
    first=0
    if [[ "${f}" == */pod-ready.yaml ]]; then
      # A kubelet reports the image it runs by digest (imageID); KWOK's stage
      # leaves it out. The operator attests managed app-servers by it.
      sed 's/^\( *\)- image: {{ \.image | Quote }}$/&\n\1  imageID: {{ .image | Quote }}/' "${mod}/${f}"
    else
      cat "${mod}/${f}"
    fi
  done >"${STATE_DIR}/kwok.yaml"
}
