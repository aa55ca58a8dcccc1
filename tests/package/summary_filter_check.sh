#!/usr/bin/env bash
# apgasrun's filter of mpiexec's output (launch/mpiexec_summary.awk) on the banners of failed
# jobs of Open MPI 4.1 (stderr, recorded with `apgasrun --verbose`) and of MPICH 4.0's Hydra
# (stdout), in banners/: which line it keeps for apgasrun, and that everything else passes
# unchanged. The live jobs are in
# job_failure_check.sh; these cases do not depend on what Open MPI happens to print in a run.
#   summary_filter_check.sh AWK_FILE BANNER_DIR
set -uo pipefail
awk_file=$1
dir=$2
status=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# case FIXTURE SUMMARY PASSED: the summary line ("" for none) and the lines that must pass.
case_of() {
  local fixture=$1 want_summary=$2 want_passed=$3
  rm -f "$work/summary"
  awk -v summary="$work/summary" -f "$awk_file" <"$dir/$fixture.txt" >"$work/out" ||
    { echo "FAILED: $fixture: awk exited $?"; status=1; return; }
  local got_summary=""
  [[ -e "$work/summary" ]] && got_summary=$(cat "$work/summary")
  [[ "$got_summary" == "$want_summary" ]] ||
    { echo "FAILED: $fixture: summary '$got_summary', expected '$want_summary'"; status=1; }
  [[ "$(cat "$work/out")" == "$want_passed" ]] ||
    { echo "FAILED: $fixture: passed"; diff <(echo "$want_passed") "$work/out"; status=1; }
  echo "$fixture: ${got_summary:-no summary}"
}

case_of openmpi_exit3 'place 1 exited with code 3' ''
case_of openmpi_uncaught 'place 0 exited with code 1' "$(grep '^apgas: ' "$dir/openmpi_uncaught.txt")"
case_of openmpi_killed 'place 1 (node vm) was killed by signal 9 (Killed)' \
  'apgas: place 0: stopped by SIGTERM'
# Only "a place failed", as Open MPI now and then ends a job: apgasrun words it from the exit status.
case_of openmpi_unnamed '?' ''
case_of openmpi_mpiabort 'place 1 called MPI_Abort (error code 7)' ''
case_of openmpi_nofin 'place 1 (node vm) exited without shutting MPI down' ''
case_of openmpi_program_dashes '' "$(cat "$dir/openmpi_program_dashes.txt")"
# Hydra names no rank; the signal it names is all its exit status says (9 for SIGKILL).
case_of hydra_killed $'?\nsignal 9 Killed' 'rank_death: place 1 dies now (kill)'
case_of hydra_aborted $'?\nsignal 6 Aborted' 'rank_death: place 1 dies now (abort)'
case_of hydra_program_lines '' "$(cat "$dir/hydra_program_lines.txt")"
exit "$status"
