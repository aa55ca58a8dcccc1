#!/usr/bin/env bash
# How apgasrun ends a failed job: the places' own lines, then one line of apgasrun's naming the
# place that failed and how, and none of the MPI's banners (--verbose shows them); a job stopped
# by SIGTERM to apgasrun exits with 143. With Open MPI's mpiexec, or MPICH's ($MPIEXEC).
#   job_failure_check.sh APGASRUN JOB_END_PROGRAM RANK_DEATH_PROGRAM
set -uo pipefail
apgasrun=$1
job_end=$2
rank_death=$3
status=0
err=$(mktemp)
out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT

fail() { echo "FAILED: $*"; echo "--- stderr:"; cat "$err"; status=1; }

# check NAME RC LAST_LINE_REGEX -- apgasrun arguments...
check() {
  local name=$1 want_rc=$2 last=$3
  shift 4
  local rc=0
  "$apgasrun" "$@" 2>"$err" >"$out" || rc=$?
  ((rc == want_rc)) || { fail "$name: exit code $rc, expected $want_rc"; return; }
  grep -Eq -- "$banner_lines" "$err" "$out" && { fail "$name: the MPI's banner is still there"; return; }
  local lines
  lines=$(grep -c '^apgasrun: ' "$err")
  # The command line, which apgasrun echoes, and the one line at the end.
  ((lines == 2)) || { fail "$name: $lines lines of apgasrun's, expected 2"; return; }
  tail -n 1 "$err" | grep -Eq -- "$last" ||
    { fail "$name: the last line does not match '$last'"; return; }
  echo "$name: $(tail -n 1 "$err")"
}

# Open MPI's mpiexec, or MPICH's (Hydra), which writes its banner to stdout.
# The whole answer first: `| grep -q` under pipefail can fail on mpiexec's SIGPIPE.
if [[ "$("${MPIEXEC:-mpiexec}" --version 2>&1 || true)" == *HYDRA* ]]; then
  banner_lines='^={20,}$|BAD TERMINATION|EXIT STRING|FAQ page'
  rank_variable=PMI_RANK
else
  banner_lines='^-{20,}$|Primary job|mpiexec noticed|mpiexec detected'
  rank_variable=OMPI_COMM_WORLD_RANK
fi
at_place_1() { echo "if [ \"\$$rank_variable\" = 1 ]; then $1; fi; sleep 1"; }

# Open MPI's banners now and then say only that a place failed (seen under load); the line then
# says what the exit status does. summary_filter_check.sh checks the named lines on recorded banners.
check exit_code 3 '^apgasrun: (place 1 exited with code 3|a place exited with code 3; mpiexec did not say which)$' -- \
  -n 2 --threads 1 sh -c "$(at_place_1 'exit 3')"
killed='(place 1 \(node [^ ]+\) was killed by signal 9 \(Killed\)|a place was killed by signal 9 \(KILL\); mpiexec did not say which)'
check killed 137 "^apgasrun: $killed\$" -- -n 2 --threads 1 "$rank_death" kill-in-at
check killed_shell 137 "^apgasrun: $killed\$" -- -n 2 --threads 1 sh -c "$(at_place_1 'kill -9 $$')"
check uncaught 1 '^apgasrun: (place [01] exited with code 1|a place exited with code 1; mpiexec did not say which)$' -- \
  -n 2 --threads 1 "$job_end" uncaught
grep -q '^apgas: place 1: uncaught .*the last place fails' "$err" ||
  fail "uncaught: the place's own line is gone"

# A program's own lines of dashes are its output, and pass.
"$apgasrun" -n 2 --threads 1 sh -c 'echo ----------------------------------------- >&2; echo mine >&2' \
  2>"$err" >/dev/null || fail "dashes: exited $?"
[[ $(grep -c '^-----------------------------------------$' "$err") == 2 && $(grep -c '^mine$' "$err") == 2 ]] ||
  fail "dashes: the program's own stderr was changed"

# --verbose: the MPI's banners as they are.
"$apgasrun" --verbose -n 2 --threads 1 "$rank_death" kill-in-at >"$err" 2>&1
grep -Eq -- "$banner_lines" "$err" || fail "verbose: no banner from the MPI"

# SIGTERM to apgasrun stops the job, which exits with 128 + 15 whatever mpiexec says.
"$apgasrun" -n 2 --threads 1 sh -c 'sleep 30' 2>"$err" >/dev/null &
job=$!
sleep 0.5 # usually once mpiexec runs; before it does, apgasrun stops it as soon as it starts
kill -TERM "$job"
rc=0
wait "$job" || rc=$?
((rc == 143)) && echo "stopped: exit code 143" || fail "stopped: exit code $rc, expected 143"
exit "$status"
