#!/usr/bin/env bash
# setup-helm.sh prints the path of the real Helm CLI (HELM_VERSION,
# hack/tool-versions.sh) for the chart tests under test/e2e/chart (HELM_BIN).
# hack/setup-envtest.sh builds it from the Go module proxy, in the same go
# build as etcd and the Kubernetes binaries, whose packages it mostly shares,
# and stamps its version and the Kubernetes version `helm template` and
# `helm lint` assume without a cluster, as Helm's release build does.
#
# Only the binary's path goes to stdout; every message goes to stderr.
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$("${HACK_DIR}/setup-envtest.sh")"
echo "${dir}/helm"
