#!/usr/bin/env bash
# bench-profiles.sh OUT DOCS writes the top 10 of the profiles that
# BenchmarkDispatcherConcurrency wrote to OUT (its HTTP arm at saturation) as
# text to DOCS: dispatcher-cpu.txt (CPU) and dispatcher-alloc.txt (bytes
# allocated during the profiled loop: the allocation profile after it, less
# the one before), each by flat and by cumulative share. `make
# bench-dispatcher` runs it.
set -euo pipefail

mkdir -p "$2"
out=$(cd "$1" && pwd) docs=$(cd "$2" && pwd)

# top prints one view; pprof's notes on stderr (no binary to symbolize
# with: the profiles carry their function names) are left out.
top() {
  echo "\$ go tool pprof $*"
  go tool pprof "$@" 2>/dev/null
  echo
}

cd "$out"
{
  top -top -nodecount=10 dispatcher-cpu.pprof
  top -top -cum -nodecount=10 dispatcher-cpu.pprof
} >"$docs/dispatcher-cpu.txt"
{
  top -top -nodecount=10 -sample_index=alloc_space -ignore=runtime/pprof -base dispatcher-alloc-base.pprof dispatcher-alloc.pprof
  top -top -cum -nodecount=10 -sample_index=alloc_space -ignore=runtime/pprof -base dispatcher-alloc-base.pprof dispatcher-alloc.pprof
} >"$docs/dispatcher-alloc.txt"
