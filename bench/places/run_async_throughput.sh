#!/usr/bin/env bash
# bench/places/run_async_throughput.sh: remote asyncs per second with coalescing on and off
# (one runtime per process, so two runs of bench_async_throughput) and their ratio.
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

declare -A rate
for mode in yes no; do
  out="$("$root/launch/apgasrun" -n "$places" "${threads[@]}" "$dir/bench_async_throughput" \
           --coalesce "$mode" "$@")"
  printf '%s\n\n' "$out"
  rate[$mode]="$(sed -n 's/^RESULT .*asyncs_per_s=\([0-9.]*\).*/\1/p' <<<"$out")"
  [[ -n "${rate[$mode]}" ]] || { echo "no RESULT line for --coalesce $mode" >&2; exit 1; }
done

awk -v y="${rate[yes]}" -v n="${rate[no]}" 'BEGIN {
  r = y / n
  printf "asyncs/s: coalescing on %.0f, off %.0f, ratio %.1fx (target >= 10x): %s\n",
         y, n, r, (r >= 10 ? "PASS" : "MISS")
}'
