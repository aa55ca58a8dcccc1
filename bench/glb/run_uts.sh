#!/usr/bin/env bash
# bench/glb/run_uts.sh: UTS over GLB against the sequential UTS of the same binary, side by side:
# 1 place x 2 workers, 2 places x 1 worker, 4 places x 1 worker (oversubscribed on 2 cores), and
# 1 place x 1 worker. Each run of the uts app times its sequential search too, so every line's
# efficiency compares two measurements made moments apart: speedup over the sequential search
# per core used, places x workers but at most the machine's cores (4 places on 2 cores have 2).
# Prints one line per run and the median per configuration, with the busiest place's items over
# the mean, the share of the run the places had work (busy), and GLB's messages and lifeline
# activations per place. On a shared machine, other jobs' load shows in the figures: the load
# average is printed first.
#
#   bench/glb/run_uts.sh [--reps R] [--build DIR] [-- uts flags...]   (default tree: T1L)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build/release"
REPS=3
TREE=(-t 1 -a 3 -d 13 -b 4 -r 29)
while (($#)); do
  case "$1" in
    --reps) REPS="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --) shift; TREE=("$@"); break ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) echo "run_uts.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
UTS="$BUILD/apps/uts/uts"
[[ -x "$UTS" ]] || { echo "run_uts.sh: $UTS not built (cmake --build $BUILD --target uts)" >&2; exit 1; }

configs=("1 1" "1 2" "2 1" "4 1")
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); uts ${TREE[*]}; $REPS rounds"
for ((r = 1; r <= REPS; ++r)); do
  for c in "${configs[@]}"; do
    read -r places threads <<<"$c"
    if ((places == 1)); then
      "$UTS" "${TREE[@]}" --threads "$threads" --json 2>/dev/null | tail -1 >>"$out"
    else
      "$ROOT/launch/apgasrun" -n "$places" --threads "$threads" "$UTS" "${TREE[@]}" --json \
        2>/dev/null | tail -1 >>"$out"
    fi
  done
done
python3 - "$out" "$(nproc)" <<'PY'
import json, statistics, sys
cores = int(sys.argv[2])
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
for r in runs:
    used = min(r["places"] * r["threads"], cores)
    r["efficiency"] = r["seq_seconds"] / r["seconds"] / used if r.get("seq_seconds") else 0
print(f"{'places x workers':>16} {'seconds':>8} {'seq s':>7} {'M nodes/s':>10} {'efficiency':>10} "
      f"{'busiest/mean':>12} {'busy':>6} {'glb msgs/place':>14} {'lifeline act./place':>19}")
by = {}
for r in runs:
    key = (r["places"], r["threads"])
    by.setdefault(key, []).append(r)
    print(f"{r['places']:>8} x {r['threads']:<5} {r['seconds']:>8.3f} {r.get('seq_seconds', 0):>7.3f} "
          f"{r['nodes_per_second'] / 1e6:>10.2f} {100 * r.get('efficiency', 0):>9.1f}% "
          f"{r['imbalance']:>12.3f} {100 * r['busy_fraction']:>5.1f}% {r['glb_messages_per_place']:>14.1f} "
          f"{r['lifeline_activations_per_place']:>19.1f}" + ("" if r["verified"] else "  FAILED"))
print("medians:")
for (p, t), rs in sorted(by.items()):
    med = lambda k: statistics.median(x.get(k, 0) for x in rs)
    print(f"{p:>8} x {t:<5} {med('seconds'):>8.3f} {med('seq_seconds'):>7.3f} "
          f"{med('nodes_per_second') / 1e6:>10.2f} {100 * med('efficiency'):>9.1f}% "
          f"{med('imbalance'):>12.3f} {100 * med('busy_fraction'):>5.1f}% {med('glb_messages_per_place'):>14.1f} "
          f"{med('lifeline_activations_per_place'):>19.1f}")
PY
