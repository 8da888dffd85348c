#!/usr/bin/env bash
# bench-profiles.sh OUT DOCS writes the top 10 of the profiles that
# BenchmarkDispatcherConcurrency wrote to OUT (its HTTP arm at saturation) as
# text to DOCS: dispatcher-cpu.txt (CPU) and dispatcher-alloc.txt (bytes
# allocated during the profiled loop: the allocation profile after it, less
# the one before), each by flat and by cumulative share; and, when
# BenchmarkDispatcherProcess wrote it, the top 20 of its HTTP layer's
# profile to dispatcher-http-cpu.txt (the samples its http-cpu-ms/turn
# counts: the same focus and ignore), and its profiles of the dispatcher
# process at both cluster sizes to dispatcher-process-cpu.txt; and, when
# BenchmarkOperatorScale wrote them, the manager's heap profiles at its
# largest size to manager-heap.txt: the live heap after a forced collection
# by allocation site, then the bytes allocated during one more policy
# change (the profile after it, less the one before). Each part is written
# only when its profiles are there; so are the dispatcher's execution
# trace in the open loop, to dispatcher-open-trace.txt, and the CPU profiles of
# kube-apiserver and the manager during BenchmarkAdmission's paced runs at
# its largest size, to admission-cpu.txt. `make bench-dispatcher` and the
# admission and scale sections of `make bench` run it.
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
if [[ -f dispatcher-cpu.pprof ]]; then
  {
    top -top -nodecount=10 dispatcher-cpu.pprof
    top -top -cum -nodecount=10 dispatcher-cpu.pprof
  } >"$docs/dispatcher-cpu.txt"
fi
if [[ -f dispatcher-alloc.pprof ]]; then
  {
    top -top -nodecount=10 -sample_index=alloc_space -ignore=runtime/pprof -base dispatcher-alloc-base.pprof dispatcher-alloc.pprof
    top -top -cum -nodecount=10 -sample_index=alloc_space -ignore=runtime/pprof -base dispatcher-alloc-base.pprof dispatcher-alloc.pprof
  } >"$docs/dispatcher-alloc.txt"
fi

# The HTTP layer's share as BenchmarkDispatcherProcess attributes it
# (httpFocus and httpIgnore in process_bench_figures_test.go).
if [[ -f dispatcher-http-cpu.pprof ]]; then
  http=(-focus='net/http\.\(\*conn\)\.serve' -ignore='internal/dispatcher/engine\.|journal\.\(\*runReader\)|journal\.\(\*Journal\)\.openRunFile|testutil/appserverdouble\.')
  {
    top -top -nodecount=20 "${http[@]}" dispatcher-http-cpu.pprof
    top -top -cum -nodecount=20 "${http[@]}" dispatcher-http-cpu.pprof
  } >"$docs/dispatcher-http-cpu.txt"
fi

# The dispatcher process at the two cluster sizes of size-cpu-ratio
# (BenchmarkDispatcherProcess, the same 10-session closed loop): each by
# cumulative share, then what the large cluster adds (the large profile
# with the small one as its base; both ran for the same time).
if [[ -f dispatcher-process-small-cpu.pprof && -f dispatcher-process-large-cpu.pprof ]]; then
  {
    top -top -cum -nodecount=30 dispatcher-process-small-cpu.pprof
    top -top -cum -nodecount=30 dispatcher-process-large-cpu.pprof
    top -top -nodecount=20 -diff_base dispatcher-process-small-cpu.pprof dispatcher-process-large-cpu.pprof
  } >"$docs/dispatcher-process-cpu.txt"
fi

# The dispatcher's execution trace during BenchmarkDispatcherProcess's last
# open loop (dispatcher-open.trace): where its goroutines waited, as
# profiles (go tool trace -pprof) of the time the goroutines serving a
# turn's request and stream spent runnable but not running, blocked on
# synchronisation and in system calls, by cumulative share (net/http's frames
# hidden).
if [[ -f dispatcher-open.trace ]]; then
  {
    for kind in sched sync syscall; do
      go tool trace -pprof="$kind" dispatcher-open.trace >"dispatcher-open-$kind.pprof" 2>/dev/null
      # Only the turns' own goroutines: idle workers wait too, for work.
      top -top -cum -nodecount=25 -hide='^net/http\.' -focus='httpapi\.\(\*Handler\)\.(turn|stream)' "dispatcher-open-$kind.pprof"
    done
  } >"$docs/dispatcher-open-trace.txt"
fi

# The manager at the largest size BenchmarkOperatorScale ran
# (manager-heap-<sessions>-before/after.pprof; the profiles sample one
# allocation per 512 KiB, Go's default).
largest=$(compgen -G "manager-heap-*-before.pprof" | sed -E 's/manager-heap-([0-9]+)-before.pprof/\1/' | sort -n | tail -1 || true)
if [[ -n "$largest" && -f "manager-heap-$largest-after.pprof" ]]; then
  before="manager-heap-$largest-before.pprof" after="manager-heap-$largest-after.pprof"
  {
    echo "# The manager at $largest sessions (BenchmarkOperatorScale, measureManagerMemory)"
    echo
    top -top -nodecount=15 -sample_index=inuse_space "$before"
    top -top -cum -nodecount=25 -sample_index=inuse_space "$before"
    top -top -nodecount=15 -sample_index=alloc_space -base "$before" "$after"
    top -top -cum -nodecount=25 -sample_index=alloc_space -base "$before" "$after"
  } >"$docs/manager-heap.txt"
fi

# kube-apiserver and the manager during the paced admission runs
# (admission-<process>-cpu-<resource>.pprof): each by cumulative share,
# and the API server's share spent calling the webhooks.
if compgen -G "admission-*-cpu-*.pprof" >/dev/null; then
  {
    for resource in agentsessions agentharnesses; do
      for process in apiserver manager; do
        f="admission-$process-cpu-$resource.pprof"
        [[ -f "$f" ]] || continue
        top -top -cum -nodecount=25 "$f"
      done
      f="admission-apiserver-cpu-$resource.pprof"
      if [[ -f "$f" ]]; then
        top -top -cum -nodecount=25 -focus='admission/plugin/webhook' "$f"
      fi
    done
  } >"$docs/admission-cpu.txt"
fi
