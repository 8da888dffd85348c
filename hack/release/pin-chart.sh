#!/usr/bin/env bash
# pin-chart.sh writes a release into a copy of the Helm chart: the chart's
# version and appVersion, the image repository, and the digests that pin the
# manager's and the dispatcher's images (read from the images.env that
# `hack/images -push` writes). The release workflow packages the result, so a
# user who installs the released chart runs exactly the images it was tested
# with, by digest.
#
# Usage: hack/release/pin-chart.sh <chart-dir> <version> <repository> <images.env>
#
# The chart is edited in place (pass a copy). Every edit is checked: a values
# file whose layout changed fails the release instead of shipping unpinned.
set -euo pipefail

die() { echo "pin-chart: error: $*" >&2; exit 1; }

[[ $# -eq 4 ]] || die "usage: $0 <chart-dir> <version> <repository> <images.env>"
chart="$1" version="$2" repository="$3" images_env="$4"
values="${chart}/values.yaml"
[[ -f "${chart}/Chart.yaml" && -f "${values}" ]] || die "${chart} is not the chart (no Chart.yaml or values.yaml)"
[[ "${version}" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "version ${version} is not semver (no leading v)"
[[ -n "${repository}" && "${repository}" != */ ]] || die "repository must be non-empty, without a trailing /"
[[ -f "${images_env}" ]] || die "${images_env} does not exist (run hack/images with -push first)"

digest_of() {
  local line
  line="$(grep -E "^$1_DIGEST=sha256:[0-9a-f]{64}$" "${images_env}")" ||
    die "${images_env} has no $1_DIGEST=sha256:<64 hex digits>"
  echo "${line#*=}"
}
manager="$(digest_of MANAGER)"
dispatcher="$(digest_of DISPATCHER)"

# replace FILE PATTERN REPLACEMENT: exactly one line must match.
replace() {
  local file="$1" pattern="$2" replacement="$3" n
  n="$(grep -cE "${pattern}" "${file}" || true)"
  [[ "${n}" == 1 ]] || die "${file}: expected one line matching /${pattern}/, found ${n}"
  sed -i -E "s|${pattern}|${replacement}|" "${file}"
}

replace "${chart}/Chart.yaml" '^version: .*$' "version: ${version}"
replace "${chart}/Chart.yaml" '^appVersion: .*$' "appVersion: \"${version}\""
replace "${values}" '^  repository: .*$' "  repository: ${repository}"
replace "${values}" '^    manager: ""$' "    manager: \"${manager}\""
replace "${values}" '^    dispatcher: ""$' "    dispatcher: \"${dispatcher}\""
echo "pin-chart: ${chart} ${version}: ${repository}/manager@${manager}, ${repository}/dispatcher@${dispatcher}" >&2
