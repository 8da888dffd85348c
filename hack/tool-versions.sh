# tool-versions.sh, sourced by the scripts that build or run them, holds the
# versions of the tools the project builds from source: the Kubernetes
# release, etcd, Helm, KWOK and kube-router (the local cluster's NetworkPolicy
# enforcer). Each can be overridden from the environment.
# shellcheck shell=bash
# shellcheck disable=SC2034 # the sourcing script uses them

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
HELM_VERSION="${HELM_VERSION:-v3.22.0}"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
KUBE_ROUTER_VERSION="${KUBE_ROUTER_VERSION:-v2.1.0}"

# TOOLS_KEY names hack/setup-envtest.sh's one build of etcd, the Kubernetes
# binaries and Helm (its cache directory and its wrapper module): a bump of
# any of the three builds them again.
TOOLS_KEY="k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}-helm-${HELM_VERSION}"
