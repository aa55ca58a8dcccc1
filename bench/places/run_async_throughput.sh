#!/usr/bin/env bash
# bench/places/run_async_throughput.sh: remote asyncs per second with coalescing on and off,
# in one run of bench_async_throughput (pairs of reps, see --compare there), and their ratio.
#
#   bench/places/run_async_throughput.sh [-n PLACES] [--threads T] [-- bench args...]
#
# Binaries: $APGAS_PLACES_BENCH_DIR, else build/release/bench/places (cmake --preset release).
# Target: >= 10x more asyncs/s with coalescing than without.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${APGAS_PLACES_BENCH_DIR:-$root/build/release/bench/places}"
places=2
threads=()
while (($#)); do
  case "$1" in
    -n) places="$2"; shift 2 ;;
    --threads) threads=(--threads "$2"); shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
[[ -x "$dir/bench_async_throughput" ]] || {
  echo "run_async_throughput.sh: $dir/bench_async_throughput not found (build it, or set APGAS_PLACES_BENCH_DIR)" >&2
  exit 2
}

out="$("$root/launch/apgasrun" -n "$places" "${threads[@]}" "$dir/bench_async_throughput" \
         --compare yes "$@")"
printf '%s\n\n' "$out"
grep -q '^RESULT compare ' <<<"$out" || { echo "no RESULT line" >&2; exit 1; }
grep '^median asyncs/s' <<<"$out"
