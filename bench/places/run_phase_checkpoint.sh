#!/usr/bin/env bash
# bench/places/run_phase_checkpoint.sh: what apgas::phase_checkpoint costs a phased program.
# heat (an N x N grid, --epsilon 0 so that every run does the same phases) at P places x 1
# worker, without checkpoints and with --checkpoint-every S, rounds alternating the two; the
# median of each and their ratio (the overhead), the median of each round's ratio, the time of
# one save (place 0's, from the run's JSON) and of the load when resuming from the last one. The
# load average is printed first: take figures on a quiet machine.
#
#   bench/places/run_phase_checkpoint.sh [--reps R] [--places P] [--every S] [--n N]
#                                        [--phases K] [--sync clock|finish] [--build DIR]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build/release"
REPS=7 PLACES=2 EVERY=1 N=1000 PHASES=6000 SYNC=clock
while (($#)); do
  case "$1" in
    --reps) REPS="$2"; shift 2 ;;
    --places) PLACES="$2"; shift 2 ;;
    --every) EVERY="$2"; shift 2 ;;
    --n) N="$2"; shift 2 ;;
    --phases) PHASES="$2"; shift 2 ;;
    --sync) SYNC="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    -h|--help) sed -n 2,10p "$0"; exit 0 ;;
    *) echo "run_phase_checkpoint.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
HEAT="$BUILD/apps/heat/heat"
[[ -x "$HEAT" ]] || { echo "run_phase_checkpoint.sh: $HEAT not built" >&2; exit 1; }
DIR="$(mktemp -d "${TMPDIR:-/tmp}/apgas-phase-checkpoint-bench-XXXXXX")"
trap 'rm -rf "$DIR"' EXIT

exec python3 - "$ROOT/launch/apgasrun" "$HEAT" "$REPS" "$PLACES" "$EVERY" "$DIR" "$N" "$PHASES" \
  "$SYNC" <<'PY'
import json, shutil, statistics, subprocess, sys

apgasrun, heat, reps, places, every, ckdir, n, phases, sync = sys.argv[1:10]
reps = int(reps)
args = ["--n", n, "--epsilon", "0", "--max-iterations", phases, "--sync", sync]

def run(extra):
    cmd = [apgasrun, "-n", places, "--threads", "1", heat] + args + ["--no-seq", "--json"] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.exit(f"run_phase_checkpoint.sh: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return json.loads(lines[-1])

mib = int(n) ** 2 * 8 / 2**20
print(f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])}; heat {n} x {n} "
      f"({mib:.1f} MiB), {phases} phases, --sync {sync}; {places} places x 1 worker; "
      f"a checkpoint every {every} s; {reps} rounds")
plain, ckpt, per_save = [], [], []
for i in range(reps):
    plain.append(run([])["seconds"])
    shutil.rmtree(ckdir, ignore_errors=True)
    r = run(["--checkpoint", ckdir, "--checkpoint-every", every])
    ckpt.append(r["seconds"])
    if r["checkpoints"]:
        per_save.append(r["checkpoint_save_seconds"] / r["checkpoints"])
    print(f"round {i + 1}: without {plain[-1]:.3f} s, with {ckpt[-1]:.3f} s "
          f"({r['checkpoints']} checkpoints)", flush=True)
resumed = run(["--resume", ckdir])
a, b = statistics.median(plain), statistics.median(ckpt)
paired = statistics.median(y / x for x, y in zip(plain, ckpt))
print(f"median without checkpoints {a:.3f} s, with {b:.3f} s: overhead {100 * (b / a - 1):+.2f}%; "
      f"median of the rounds' ratios {paired:.4f} ({100 * (paired - 1):+.2f}%)")
if per_save:
    print(f"per checkpoint: {statistics.median(per_save) * 1e3:.1f} ms in save() at place 0 "
          f"(median), {mib:.1f} MiB")
print(f"resume from the last checkpoint (phase {resumed['resumed_phase']}): "
      f"{resumed['resume_load_seconds'] * 1e3:.1f} ms to read, check and load it")
PY
