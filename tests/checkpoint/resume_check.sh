#!/usr/bin/env bash
# Checkpoint and restart end to end, as a user meets it: an app runs under launch/apgasrun with
# --checkpoint, one of its places is killed with SIGKILL once a checkpoint is complete, the
# job ends (naming the dead place), and the app run again with --resume on another number of
# places must verify its result. Then the checkpoint is damaged, or the app given other
# parameters: the resume is refused with one line of the app and exit code 2.
#
#   resume_check.sh APGASRUN WRITERS RESUMERS EVERY APP [APP ARGS...]
#
# WRITERS places write checkpoints every EVERY seconds (with --no-seq); RESUMERS places resume
# (with APP ARGS alone: an app that checks itself against its sequential version does so). The
# app must print "verified" for a correct result, and take a seed as its last argument. The last
# place is the one killed.
set -euo pipefail

apgasrun=$1 writers=$2 resumers=$3 every=$4
shift 4
app=("$@")

dir=$(mktemp -d "${TMPDIR:-/tmp}/apgas-resume-XXXXXX")
log=$dir.log
trap 'rm -rf "$dir" "$dir".*' EXIT
fail() {
  echo "resume_check: FAILED: $*" >&2
  echo "---- the app's output ----" >&2
  cat "$log" >&2 || true
  exit 1
}

# 1. The run with checkpoints, killed once one is complete.
"$apgasrun" -n "$writers" "${app[@]}" --no-seq --checkpoint "$dir" --checkpoint-every "$every" \
  >"$log" 2>&1 &
job=$!
for ((i = 0; i < 2400; ++i)); do # 120 s
  compgen -G "$dir/ckpt-[0-9]*[0-9]" >/dev/null && break
  kill -0 "$job" 2>/dev/null || break
  sleep 0.05
done
compgen -G "$dir/ckpt-[0-9]*[0-9]" >/dev/null || fail "no checkpoint was complete while the run lasted"
kill -0 "$job" 2>/dev/null || fail "the run ended before a place could be killed (a larger problem is needed)"
victim=$((writers - 1))
killed=0
for pid in $(pgrep -f -- "--checkpoint $dir" || true); do
  [[ -r /proc/$pid/environ ]] || continue
  if tr '\0' '\n' <"/proc/$pid/environ" | grep -qx "OMPI_COMM_WORLD_RANK=$victim"; then
    kill -KILL "$pid" && killed=1
  fi
done
((killed)) || fail "found no process of place $victim"
status=0
wait "$job" || status=$?
((status != 0)) || fail "the job whose place $victim was killed exited 0"
grep -Eq "^apgasrun: place $victim .*killed by signal 9" "$log" || fail "the job's end does not name place $victim"
echo "resume_check: place $victim of $writers killed; checkpoint $(basename "$(compgen -G "$dir/ckpt-[0-9]*[0-9]" | tail -1)") complete"

# 2. The resume, on another number of places.
"$apgasrun" -n "$resumers" "${app[@]}" --resume "$dir" --stats >"$log" 2>&1 ||
  fail "the resume on $resumers place(s) failed"
grep -q "verified" "$log" || fail "the resumed result is not verified"
grep -q "resumed from $dir/ckpt-" "$log" || fail "the run did not resume from the checkpoint"
echo "resume_check: resumed on $resumers place(s): $(grep -m1 verified "$log")"

# 3. Refusals: one line of the app, exit code 2.
expect_refusal() { # what-it-says, then the app's arguments
  local says=$1
  shift
  status=0
  "$apgasrun" -n "$resumers" "$@" --no-seq --resume "$dir" >"$log" 2>&1 || status=$?
  ((status == 2)) || fail "a resume that should be refused ($says) exited $status"
  local name
  name=$(basename "${app[0]}")
  [[ $(grep -c "^$name: " "$log") == 1 ]] || fail "the refusal is not one line of $name"
  grep -q "^$name: .*$says" "$log" || fail "the refusal does not say '$says'"
}
newest=$(compgen -G "$dir/ckpt-[0-9]*[0-9]" | tail -1)
cp -r "$newest" "$dir.saved"
part=$(compgen -G "$newest/place-*" | head -1)
printf 'X' | dd of="$part" bs=1 seek=20 conv=notrunc status=none
expect_refusal "is corrupted" "${app[@]}"
truncate -s 10 "$part"
expect_refusal "is truncated" "${app[@]}"
rm -rf "$newest" && cp -r "$dir.saved" "$newest"
# Another computation: the app's last argument changed (a seed).
other=("${app[@]}")
last=$((${#other[@]} - 1))
other[$last]=$((other[last] + 1))
expect_refusal "other parameters" "${other[@]}"
rm -rf "$dir"/ckpt-*
expect_refusal "no complete checkpoint" "${app[@]}"
echo "resume_check: damaged, foreign and missing checkpoints refused with exit code 2"
