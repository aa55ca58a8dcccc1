#!/usr/bin/env bash
# bench/glb/run_checkpoint.sh: what checkpoints cost a GLB run. UTS (T1L by default) at P places
# x 1 worker, without checkpoints and with --checkpoint-every S, rounds alternating the two; the
# median of each and their ratio (the overhead), the median of each round's ratio (the two runs
# of a round are moments apart: the machine's drift cancels), the places' pause and the writing per
# checkpoint (from --stats), and the time to resume from the last checkpoint written. The load
# average is printed first: take figures on a quiet machine.
#
#   bench/glb/run_checkpoint.sh [--reps R] [--places P] [--every S] [--build DIR] [-- uts flags]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build/release"
REPS=7
PLACES=2
EVERY=1
TREE=(-t 1 -a 3 -d 13 -b 4 -r 29)
while (($#)); do
  case "$1" in
    --reps) REPS="$2"; shift 2 ;;
    --places) PLACES="$2"; shift 2 ;;
    --every) EVERY="$2"; shift 2 ;;
    --build) BUILD="$2"; shift 2 ;;
    --) shift; TREE=("$@"); break ;;
    -h|--help) sed -n 2,9p "$0"; exit 0 ;;
    *) echo "run_checkpoint.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
UTS="$BUILD/apps/uts/uts"
[[ -x "$UTS" ]] || { echo "run_checkpoint.sh: $UTS not built" >&2; exit 1; }
DIR="$(mktemp -d "${TMPDIR:-/tmp}/apgas-checkpoint-bench-XXXXXX")"
trap 'rm -rf "$DIR"' EXIT

exec python3 - "$ROOT/launch/apgasrun" "$UTS" "$REPS" "$PLACES" "$EVERY" "$DIR" "${TREE[@]}" <<'PY'
import json, shutil, statistics, subprocess, sys

apgasrun, uts, reps, places, every, ckdir = sys.argv[1:7]
reps, tree = int(reps), sys.argv[7:]

def run(extra):
    cmd = [apgasrun, "-n", places, "--threads", "1", uts] + tree + ["--no-seq", "--json"] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.exit(f"run_checkpoint.sh: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
    return json.loads(lines[-1]), p.stderr

print(f"load average: {' '.join(open('/proc/loadavg').read().split()[:3])}; uts {' '.join(tree)}; "
      f"{places} places x 1 worker; a checkpoint every {every} s; {reps} rounds")
plain, ckpt, pauses, writes, counts = [], [], [], [], []
for i in range(reps):
    r, _ = run([])
    plain.append(r["seconds"])
    shutil.rmtree(ckdir, ignore_errors=True)
    r, _ = run(["--checkpoint", ckdir, "--checkpoint-every", every])
    ckpt.append(r["seconds"])
    counts.append(r.get("checkpoints", 0))
    if counts[-1]:
        pauses.append(r["checkpoint_pause_ms"])
        writes.append(r["checkpoint_write_ms"])
    print(f"round {i + 1}: without {plain[-1]:.3f} s, with {ckpt[-1]:.3f} s "
          f"({counts[-1]} checkpoints)", flush=True)
r, _ = run(["--resume", ckdir])
resume = r.get("resume_seconds")
a, b = statistics.median(plain), statistics.median(ckpt)
paired = statistics.median(y / x for x, y in zip(plain, ckpt))  # each round's pair: same drift
print(f"median without checkpoints {a:.3f} s, with {b:.3f} s: overhead {100 * (b / a - 1):+.2f}%; "
      f"median of the rounds' ratios {paired:.4f} ({100 * (paired - 1):+.2f}%)")
if pauses:
    print(f"per checkpoint: places paused {statistics.median(pauses):.2f} ms, writing and commit "
          f"{statistics.median(writes):.2f} ms (medians; {statistics.median(counts):.0f} per run)")
if resume is not None:
    print(f"resume from the last checkpoint: {resume * 1e3:.1f} ms to read, check and load it")
PY
