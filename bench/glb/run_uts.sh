#!/usr/bin/env bash
# bench/glb/run_uts.sh: UTS over GLB against the sequential UTS of the same binary, side by side:
# 1 place x 1 worker, 1 place x 2 workers, 2 places x 1 worker, 4 places x 1 worker
# (oversubscribed on 2 cores), rounds alternating the configurations. Each run of the uts app
# also times its sequential search, so every line compares two measurements made moments apart:
#   efficiency      speedup over the sequential search per core used (places x workers, at
#                   most the machine's cores: 4 places on 2 cores have 2);
#   cpu efficiency  the sequential search's CPU time over the CPU time the parallel run took
#                   (every process of the job, less the job's fixed cost, measured once per
#                   configuration on a one-node tree): what GLB costs in work, whatever else
#                   the machine runs meanwhile (wall-clock figures suffer from other jobs);
#   busiest/mean    the busiest place's items over the mean; busy: the share of the run the
#                   places had work; GLB's messages and lifeline activations per place.
# Prints one line per run, then the medians. The load average is printed first.
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
    -h|--help) sed -n 2,18p "$0"; exit 0 ;;
    *) echo "run_uts.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
UTS="$BUILD/apps/uts/uts"
[[ -x "$UTS" ]] || { echo "run_uts.sh: $UTS not built (cmake --build $BUILD --target uts)" >&2; exit 1; }

exec python3 - "$ROOT/launch/apgasrun" "$UTS" "$REPS" "$(nproc)" "${TREE[@]}" <<'PY'
import json, os, resource, statistics, subprocess, sys

apgasrun, uts, reps, cores = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tree = sys.argv[5:]
configs = [(1, 1), (1, 2), (2, 1), (4, 1)]

def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime

def run(places, threads, args):
    """The app's JSON and the CPU time of every process of the job."""
    cmd = [uts] + args + ["--threads", str(threads), "--json"]
    if places > 1:
        cmd = [apgasrun, "-n", str(places), "--threads", str(threads)] + cmd
    before = children_cpu()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    cpu = children_cpu() - before
    lines = [l for l in out.splitlines() if l.startswith("{")]
    if not lines:
        sys.exit(f"run_uts.sh: no result from {' '.join(cmd)}")
    return json.loads(lines[-1]), cpu

print(f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])}; uts {' '.join(tree)}; "
      f"{reps} rounds; {cores} cores")
fixed = {c: run(*c, ["-t", "0", "-b", "0", "-r", "1", "--no-seq"])[1] for c in configs}
head = (f"{'places x workers':>16} {'seconds':>8} {'seq s':>7} {'M nodes/s':>10} {'efficiency':>10} "
        f"{'cpu eff.':>8} {'busiest/mean':>12} {'busy':>6} {'glb msgs/place':>14} "
        f"{'lifeline act./place':>19}")
print(head)
rows = {c: [] for c in configs}
def show(p, t, r):
    print(f"{p:>8} x {t:<5} {r['seconds']:>8.3f} {r['seq_seconds']:>7.3f} {r['mnodes']:>10.2f} "
          f"{100 * r['eff']:>9.1f}% {100 * r['cpu_eff']:>7.1f}% {r['imbalance']:>12.3f} "
          f"{100 * r['busy_fraction']:>5.1f}% {r['glb_messages_per_place']:>14.1f} "
          f"{r['lifeline_activations_per_place']:>19.1f}" + ("" if r["verified"] else "  FAILED"))
for _ in range(reps):
    for (p, t) in configs:
        r, cpu = run(p, t, tree)
        r["mnodes"] = r["nodes_per_second"] / 1e6
        r["eff"] = r["seq_seconds"] / r["seconds"] / min(p * t, cores)
        r["cpu_eff"] = r["seq_cpu_seconds"] / max(cpu - r["seq_cpu_seconds"] - fixed[(p, t)], 1e-9)
        rows[(p, t)].append(r)
        show(p, t, r)
print("medians:")
for (p, t), rs in rows.items():
    show(p, t, {k: statistics.median(x[k] for x in rs) if isinstance(rs[0][k], (int, float))
                else rs[0][k] for k in rs[0]})
PY
