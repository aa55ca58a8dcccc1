#!/usr/bin/env bash
# bench/places/run_clock_apps.sh: the phased apps (averaging, heat, leader-election LCR and HS)
# with one clock against one finish per phase, at 1, 2 and 4 places. Each run is one process
# with --sync both: clock and finish runs alternate (--repeat R, best of each), every run is
# checked, and the table gives both times and their ratio (target: clock/finish <= 1).
#
#   bench/places/run_clock_apps.sh [--quick] [--repeat R] [--places "1 2 4"] [-- app args...]
#
# Binaries: $APGAS_APPS_DIR, else build/release/apps (cmake --preset release). Runs go through
# launch/apgasrun, which echoes the exact mpiexec command line. Threads: 2 at one place (one per
# core of this 2-core machine), 1 per place beyond ($APGAS_BENCH_THREADS_1 and
# $APGAS_BENCH_THREADS_N override). --quick shrinks every size (a smoke run, numbers
# meaningless). A failed check ends the script with an error; a missed target does not.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="${APGAS_APPS_DIR:-$root/build/release/apps}"
run="$root/launch/apgasrun"

quick=0
repeat=3
places_list="1 2 4"
extra=()
while (($#)); do
  case "$1" in
    --quick) quick=1; shift ;;
    --repeat) repeat="$2"; shift 2 ;;
    --places) places_list="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "run_clock_apps.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

# name | binary | arguments (about a second per mode at one place on an idle machine)
if ((quick)); then
  cases=(
    "averaging|averaging/averaging|--n 1000 --epsilon 1e-3"
    "heat|heat/heat|--n 64 --epsilon 1e-3"
    "lcr|leader_election/leader-election|--algorithm lcr --n 128"
    "hs|leader_election/leader-election|--algorithm hs --n 128"
  )
  repeat=1
else
  cases=(
    "averaging|averaging/averaging|--n 10000 --epsilon 1e-5"
    "heat|heat/heat|--n 160 --epsilon 1e-5"
    "lcr|leader_election/leader-election|--algorithm lcr --n 12288"
    "hs|leader_election/leader-election|--algorithm hs --n 6144"
  )
fi

for c in "${cases[@]}"; do
  IFS='|' read -r _ bin _ <<<"$c"
  [[ -x "$dir/$bin" ]] || {
    echo "run_clock_apps.sh: $dir/$bin not found (build it, or set APGAS_APPS_DIR)" >&2
    exit 2
  }
done

echo "$(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg) (other jobs on the machine skew every number)"
echo

# One row of the table from an app's --json line.
row_py='
import json, sys
d = json.loads(sys.argv[1])
phases = d.get("iterations", d.get("rounds", 0))
c, f, r = d["clock_seconds"], d["finish_seconds"], d["clock_over_finish"]
us = lambda s: 1e6 * s / max(phases, 1)
print("%-10s %6d %7d %10d %8d %9.3f %9.3f %11.1f %10.1f %7.3f  %s" % (sys.argv[2], d["places"],
      d["threads"], d["activities"], phases, c, f, us(c), us(f), r, "ok" if r <= 1 else "SLOWER"))
'

rows=()
failed=0
for c in "${cases[@]}"; do
  IFS='|' read -r name bin args <<<"$c"
  for p in $places_list; do
    if ((p == 1)); then threads="${APGAS_BENCH_THREADS_1:-2}"; else threads="${APGAS_BENCH_THREADS_N:-1}"; fi
    # shellcheck disable=SC2086 # $args is a list of words
    if ! out="$("$run" -n "$p" --threads "$threads" "$dir/$bin" $args --sync both --no-seq \
                  --repeat "$repeat" --json "${extra[@]}" 2>&1)"; then
      printf '%s\n' "$out" >&2
      echo "run_clock_apps.sh: $name at $p place(s) failed" >&2
      failed=1
      continue
    fi
    printf '%s\n' "$out" | grep -v '^{' >&2 || true # apgasrun's command line
    json="$(printf '%s\n' "$out" | grep '^{' | tail -1)"
    rows+=("$(python3 -c "$row_py" "$json" "$name")")
  done
done

echo
printf '%-10s %6s %7s %10s %8s %9s %9s %11s %10s %7s  %s\n' app places threads activities \
  phases clock_s finish_s clock_us/ph fin_us/ph ratio target
for r in "${rows[@]}"; do printf '%s\n' "$r"; done
echo
echo "ratio = clock time / finish-per-phase time, best of $repeat each (target <= 1)"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$failed"
