#!/usr/bin/env bash
# fuzz.sh runs every native Go fuzz target for FUZZTIME each (default 10m),
# one after another (go fuzzes one target per invocation), and prints per
# target the executions Go reported last ("fuzz: elapsed: …, execs: N").
# Arguments, when given, pick the targets whose name contains one of them.
#
# TARGETS is the one list of fuzz targets; the script refuses to run when a
# `func Fuzz…` of the repository is missing from it (a new target cannot be
# forgotten) or when it names one that does not exist. A crasher is written by go to the package's
# testdata/fuzz/<FuzzName>/: commit it with the fix and a regression test
# (docs/testing.md).
set -euo pipefail

TARGETS=(
  internal/contract/wire:FuzzDecodeAttempt
  internal/contract/wire:FuzzDecodeTurnRequest
  internal/policy/selection:FuzzSelectDecodedAttempt
  internal/harness/appserver:FuzzServerFrame
  internal/harness/appserver:FuzzStdioFrames
  internal/harness/appserver:FuzzUserAgentVersion
  internal/contract/sse:FuzzRead
  internal/cli/openclawconfig:FuzzImport
  internal/policy/toolpolicy:FuzzEvaluateDenyNeverRelaxes
  internal/manager/webhook:FuzzAgentHarnessAdmission
  internal/manager/webhook:FuzzRuntimePolicyAdmission
  internal/manager/webhook:FuzzAgentSessionAdmission
  internal/dispatcher/modelcred:FuzzOpen
  internal/dispatcher/modelcred:FuzzOpenSealed
)

FUZZTIME="${FUZZTIME:-10m}"
export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false
cd "$(dirname "$0")/.."

found=()
while IFS=: read -r file name; do
  found+=("$(dirname "${file}"):${name}")
done < <(git ls-files --cached --others --exclude-standard -z -- '*_test.go' |
  xargs -0 grep -HEo '^func Fuzz[A-Za-z0-9_]+' | sed 's/^\(.*\):func \(.*\)$/\1:\2/')
missing=0
for t in "${found[@]}"; do
  if [[ " ${TARGETS[*]} " != *" ${t} "* ]]; then
    echo "fuzz.sh: ${t} is not in TARGETS" >&2
    missing=1
  fi
done
for t in "${TARGETS[@]}"; do
  if [[ " ${found[*]} " != *" ${t} "* ]]; then
    echo "fuzz.sh: TARGETS names ${t}, which is no fuzz target of the repository" >&2
    missing=1
  fi
done
[[ "${missing}" == 0 ]] || exit 2

selected=()
for t in "${TARGETS[@]}"; do
  if [[ $# == 0 ]]; then
    selected+=("$t")
    continue
  fi
  for want in "$@"; do
    if [[ "${t#*:}" == *"${want}"* ]]; then
      selected+=("$t")
      break
    fi
  done
done
[[ ${#selected[@]} -gt 0 ]] || { echo "fuzz.sh: no target matches $*" >&2; exit 2; }

logs="$(mktemp -d)"
trap 'rm -rf "${logs}"' EXIT
summary=()
failed=()
for t in "${selected[@]}"; do
  pkg="${t%%:*}" name="${t#*:}"
  echo "== ${pkg} ${name} for ${FUZZTIME}"
  status=ok
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME}" "./${pkg}/" 2>&1 | tee "${logs}/${name}.log"; then
    status=FAILED
    failed+=("${t}")
  fi
  last="$(grep -Eo 'elapsed: [^,]+, execs: [0-9]+' "${logs}/${name}.log" | tail -n 1 || true)"
  summary+=("$(printf '%-28s %-42s %-6s %s' "${pkg}" "${name}" "${status}" "${last:-no executions reported}")")
done

echo
echo "== executions per target (FUZZTIME=${FUZZTIME})"
printf '%s\n' "${summary[@]}"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: failed: ${failed[*]} (crashers are under each package's testdata/fuzz/)" >&2
  exit 1
fi
