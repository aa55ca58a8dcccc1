#!/usr/bin/env bash
# bench/places/run_all.sh: every multi-place benchmark, at 2 places (the finish-message table at
# 1 to 4 places), each printing its table, checks and target verdict. A failed check or a hang
# (each benchmark has a watchdog) ends the script with an error; a missed target does not.
#
#   bench/places/run_all.sh [--quick]
#
# Binaries: $APGAS_PLACES_BENCH_DIR, else build/release/bench/places (cmake --preset release).
# Runs go through launch/apgasrun, which echoes the exact mpiexec command line. --quick shrinks
# every size (a smoke run, numbers meaningless).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${APGAS_PLACES_BENCH_DIR:-$root/build/release/bench/places}"
export APGAS_PLACES_BENCH_DIR="$dir"
run="$root/launch/apgasrun"

quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
if ((quick)); then
  lat_args=(--iters 50 --warmup 5)
  thr_args=(--asyncs 20000 --reps 2)
  fin_args=(--max-asyncs 10000 --budget 10000 --max-finishes 20)
  gups_args=(--log-size 16 --reps 1)
  idle_args=(--seconds 0.2)
  rma_args=(--iters 50 --big-iters 5 --rounds 1)
else
  lat_args=()
  thr_args=(--asyncs 500000 --reps 5)
  fin_args=()
  gups_args=()
  idle_args=()
  rma_args=()
fi

for b in at_latency async_throughput finish_messages gups rma idle; do
  [[ -x "$dir/bench_$b" ]] || {
    echo "run_all.sh: $dir/bench_$b not found (build it, or set APGAS_PLACES_BENCH_DIR)" >&2
    exit 2
  }
done

section() { printf '\n==== %s\n\n' "$*"; }

section "machine"
echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "$(mpiexec --version 2>/dev/null | head -1)"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (other jobs on the machine skew every number)"

section "1. at round trip, place 0 -> 1, against an MPI_Send/MPI_Recv ping-pong"
echo "-- one worker per place (each place bound to its own core)"
"$run" -n 2 --threads 1 "$dir/bench_at_latency" "${lat_args[@]}" 2>&1
echo
echo "-- default threads (one per core of the machine: 2 per place, --bind-to none)"
"$run" -n 2 "$dir/bench_at_latency" "${lat_args[@]}" 2>&1
echo
echo "-- diagnosis: one worker per place, buffers leave after 1 us instead of 200 us"
"$run" -n 2 --threads 1 "$dir/bench_at_latency" --flush-us 1 "${lat_args[@]}" 2>&1
echo
echo "-- diagnosis: one worker per place, no coalescing"
"$run" -n 2 --threads 1 "$dir/bench_at_latency" --coalesce no "${lat_args[@]}" 2>&1

section "2. remote asyncs per second, place 0 -> 1, coalescing on and off"
"$root/bench/places/run_async_throughput.sh" -n 2 --threads 1 -- "${thr_args[@]}" 2>&1

section "3. finish control messages, 1 to 4 places (one worker per place)"
"$run" -n 1 --threads 1 "$dir/bench_finish_messages" "${fin_args[@]}" 2>&1
for p in 2 3 4; do
  "$run" -n "$p" --threads 1 "$dir/bench_finish_messages" --rows-only "${fin_args[@]}" 2>&1
done

section "4. RandomAccess (GUPS), apgas against MPI_Alltoallv, 2 places"
echo "-- one worker per place (each place bound to its own core)"
"$run" -n 2 --threads 1 "$dir/bench_gups" "${gups_args[@]}" 2>&1
echo
echo "-- default threads (2 per place, --bind-to none: the MPI peer runs unbound too)"
"$run" -n 2 "$dir/bench_gups" "${gups_args[@]}" 2>&1

section "5. one-sided access, place 0 -> 1: rget/rput against MPI_Get/MPI_Put"
"$run" -n 2 --threads 1 "$dir/bench_rma" "${rma_args[@]}" 2>&1

section "6. an idle place: CPU and wake-ups, against a rank waiting in MPI_Recv"
"$dir/bench_idle" "${idle_args[@]}" 2>&1   # one place, no mpirun
for p in 2 4; do
  "$run" -n "$p" --threads 1 "$dir/bench_idle" "${idle_args[@]}" 2>&1
done

section "done"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
