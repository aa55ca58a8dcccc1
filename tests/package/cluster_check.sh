#!/usr/bin/env bash
# Jobs on several nodes, on this one machine: each node a network namespace of its own
# (launch/netns-cluster), reached through apgasrun --hostfile over TCP; and ssh to a node that
# never answers.
#
#   cluster_check.sh CASE PROGRAM [OTHER_BUILD]
#
#   hello            PROGRAM (hello_places) on 3 nodes x 2 places: its total, places on each node
#   environment      APGAS_* variables set here reach every place, and each place has its node's
#                    cores / 2 threads (PROGRAM: hello_places)
#   node_dies        the places of one node are killed mid-run (PROGRAM: a long fib): the job
#                    ends, and mpiexec names the node
#   node_dies_resume PROGRAM (an app that checks its result, then its flags) on 3 nodes x 2
#                    places writes a checkpoint every 0.5 s (with --no-seq); node3's places
#                    are killed once one is complete; the job ends naming node3, and a resume
#                    on 4 places (with the flags alone) must print "verified"
#   different_build  one node has OTHER_BUILD at PROGRAM's path (PROGRAM: job_end): refused
#   unreachable      the hostfile names an address that never answers ssh: the job ends
#                    within 15 s naming it (PROGRAM: hello_places)
#   stopped          SIGTERM, then SIGINT, to apgasrun while ssh still connects: it ends and
#                    leaves nothing behind (PROGRAM: hello_places)
#
# Every case sets up its namespaces under a name of its own and takes them down on every way
# out; processes left in them fail the case. Exits 77 (skipped) where this machine cannot make
# namespaces, saying why.
set -euo pipefail

usage() {
  printf 'usage: %s hello|environment|node_dies|node_dies_resume|different_build|unreachable|stopped PROGRAM [OTHER_BUILD | FLAGS...]\n' \
    "${0##*/}" >&2
  exit 2
}
(($# >= 2)) || usage
case_name="$1"
program="$2"
other_build="${3:-}"
program_args=("${@:3}")
[[ -x "$program" ]] || { echo "no program at $program" >&2; exit 2; }

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cluster_script="$root/launch/netns-cluster"
name="ctest-$$-$RANDOM"
work="$(mktemp -d "${TMPDIR:-/tmp}/apgas-$name.XXXXXX")"
out="$work/out"

fail() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }

# The processes of namespace $1 that have not ended (a zombie waits only to be collected).
live_pids() {
  local pid stat
  for pid in $(ip netns pids "$1" 2>/dev/null); do
    stat="$(cat "/proc/$pid/stat" 2>/dev/null || true)"
    stat="${stat##*) }" # the state follows the command's name, which may hold anything
    [[ -z "$stat" || "$stat" == Z* ]] || printf '%s ' "$pid"
  done
}

# The live processes of namespace $1 named $2 (as /proc/PID/comm has it: 15 characters).
pids_named() {
  local pid
  for pid in $(live_pids "$1"); do
    [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" != "${2:0:15}" ]] || printf '%s ' "$pid"
  done
}

# Fails if namespace $1 still holds a process, after a few seconds for the last ones to go.
expect_empty() {
  local deadline=$((SECONDS + 5)) left
  while left="$(live_pids "$1")" && [[ -n "$left" ]]; do
    ((SECONDS < deadline)) || fail "processes left in $1: $(ps -o pid=,comm= -p "${left% }" | tr '\n' ' ')"
    sleep 0.1
  done
}

# Takes down the namespaces of run $1 of this script: its cluster, and those of the ssh cases.
remove_namespaces() {
  local ns
  "$cluster_script" down "$1" >/dev/null 2>&1 || true
  for ns in $(ip netns list | awk '{ print $1 }' | grep -E "^apgas-$1-" || true); do
    ip netns pids "$ns" | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
}

# What runs of this script left when they were killed (SIGKILL skips the trap): namespaces of a
# process that is gone.
remove_abandoned() {
  local run pid
  for run in $(ip netns list | sed -nE 's/^apgas-(ctest-[0-9]+-[0-9]+)-.*/\1/p' | sort -u); do
    pid="${run#ctest-}"
    [[ -e "/proc/${pid%%-*}" ]] || remove_namespaces "$run"
  done
}

cleanup() {
  remove_namespaces "$name"
  rm -rf "$work"
}
trap cleanup EXIT

if ! why="$("$cluster_script" check 2>&1)"; then
  printf 'skipped: %s\n' "${why#*: }"
  exit 77
fi
remove_abandoned
# The nodes start with an environment as bare as ssh gives: the sanitizers' settings go along.
export NETNS_CLUSTER_SENDENV="ASAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS UBSAN_OPTIONS"

started=""
start_clock() { started="$EPOCHREALTIME"; }
seconds_since_start() { awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }

show_job() {
  printf '%s\n--- stderr:\n%s\n--- exit code %s after %s s\n' "$(cat "$out")" "$(cat "$out.err")" \
    "$rc" "$took"
}

# job LIMIT command...: runs the command with its output in $out (stdout) and $out.err, at most
# LIMIT seconds; sets rc and took (seconds).
job() {
  local limit="$1"
  shift
  start_clock
  rc=0
  timeout -k 5 "$limit" "$@" >"$out" 2>"$out.err" || rc=$?
  took="$(seconds_since_start)"
  show_job
  ((rc != 124)) || fail "the job did not end within $limit s"
}

expect_output() { grep -Eq -- "$1" "$out" "$out.err" || fail "the output does not match: $1"; }

# A background job in a process group of its own, so that SIGINT is not ignored in it as in a
# background job of a script: its pid in $bg.
start_background() {
  set -m
  "$@" >"$out" 2>"$out.err" &
  bg=$!
  set +m
}

# Waits for $bg to end, at most $1 seconds; sets rc and took (since the last start_clock).
wait_background() {
  local deadline=$((SECONDS + $1))
  while kill -0 "$bg" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  if kill -0 "$bg" 2>/dev/null; then
    kill -KILL "$bg" 2>/dev/null || true
    fail "the job did not end within $1 s: $(cat "$out" "$out.err")"
  fi
  rc=0
  wait "$bg" || rc=$?
  took="$(seconds_since_start)"
  show_job
}

# Waits until a line matching $1 is in the job's output, at most $2 seconds.
wait_for_output() {
  local deadline=$((SECONDS + $2))
  until grep -Eq -- "$1" "$out" "$out.err" 2>/dev/null; do
    kill -0 "$bg" 2>/dev/null || fail "the job ended before printing $1: $(cat "$out" "$out.err")"
    ((SECONDS < deadline)) || fail "no line matching $1 within $2 s"
    sleep 0.1
  done
}

cluster_up() { "$cluster_script" up "$name" --nodes 3 --slots 2; }
# The cluster's nodes hold no process once its job has ended.
expect_nodes_empty() {
  local ns
  for ns in $(ip netns list | awk '{ print $1 }' | grep -E "^apgas-$name-"); do
    expect_empty "$ns"
  done
}
on_cluster=("$cluster_script" run "$name" --net shm+tcp)

# A client namespace with an address on a link where 192.0.2.1 (TEST-NET-1) is a neighbour that
# never answers: its packets go to a namespace that drops them, so ssh waits for its timeout.
unreachable_up() {
  command -v ssh >/dev/null 2>&1 || { echo "skipped: no ssh client (Debian: openssh-client)"; exit 77; }
  client="apgas-$name-client"
  ip netns add "$client"
  ip netns add "apgas-$name-void"
  ip -n "$client" link set lo up
  ip -n "$client" link add eth0 type veth peer name eth0 netns "apgas-$name-void"
  ip -n "$client" addr add 192.0.2.2/24 dev eth0
  ip -n "$client" link set eth0 up
  ip -n "apgas-$name-void" link set eth0 up
  ip -n "$client" neigh add 192.0.2.1 lladdr 02:00:00:00:00:01 dev eth0 nud permanent
  printf '192.0.2.1 slots=2\n' >"$work/hosts"
}

# Nothing of the job is left: no process in the client namespace (ssh, mpiexec, apgasrun), and
# none that names the job's hostfile anywhere.
expect_client_empty() {
  expect_empty "$client"
  ! pgrep -f -- "$work/hosts" >/dev/null || fail "left behind: $(pgrep -af -- "$work/hosts")"
}

case "$case_name" in
  hello)
    cluster_up
    job 60 "${on_cluster[@]}" --verbose "$program"
    ((rc == 0)) || fail "exit code $rc, expected 0"
    grep -qx '6 place(s): total = 66' "$out" || fail "stdout is not '6 place(s): total = 66'"
    for node in node1 node2 node3; do
      expect_output "^\[$node:[0-9]+\] MCW rank [0-5] "
    done
    expect_nodes_empty
    ;;
  environment)
    cluster_up
    threads=$(($(nproc) / 2))
    ((threads >= 1)) || threads=1
    job 60 env APGAS_STATS=1 APGAS_POLICY=help-first "${on_cluster[@]}" "$program"
    ((rc == 0)) || fail "exit code $rc, expected 0"
    for place in 0 1 2 3 4 5; do
      expect_output "^apgas statistics: place $place of 6, $threads worker\(s\), policy help-first,"
    done
    expect_nodes_empty
    ;;
  node_dies)
    cluster_up
    start_background env APGAS_PROGRESS_MS=100 "${on_cluster[@]}" "$program" 90
    # Mid-run: node3's places (4 and 5) are inside the runtime.
    wait_for_output '^apgas progress: place 4 of 6' 30
    wait_for_output '^apgas progress: place 5 of 6' 10
    read -r -a victims <<<"$(pids_named "apgas-$name-node3" "$(basename "$program")")"
    ((${#victims[@]})) || fail "no place of $program found on node3"
    echo "killing node3's places: ${victims[*]}"
    start_clock
    kill -KILL "${victims[@]}"
    wait_background 30
    ((rc != 0)) || fail "exit code 0, expected a failure"
    expect_output "apgasrun: place [45] \\(node node3(, pid [0-9]+)?\\) was killed by signal 9"
    echo "the job ended $took s after node3's places died"
    expect_nodes_empty
    ;;
  node_dies_resume)
    cluster_up
    ckpt="$work/checkpoints" # the nodes share this machine's file system
    start_background "${on_cluster[@]}" "$program" "${program_args[@]}" --no-seq \
      --checkpoint "$ckpt" --checkpoint-every 0.5
    deadline=$((SECONDS + 60))
    until compgen -G "$ckpt/ckpt-[0-9]*[0-9]" >/dev/null; do
      kill -0 "$bg" 2>/dev/null || fail "the job ended before a checkpoint was complete: $(cat "$out" "$out.err")"
      ((SECONDS < deadline)) || fail "no complete checkpoint within 60 s"
      sleep 0.05
    done
    read -r -a victims <<<"$(pids_named "apgas-$name-node3" "$(basename "$program")")"
    ((${#victims[@]})) || fail "no place of $program found on node3"
    echo "killing node3's places once $(basename "$(compgen -G "$ckpt/ckpt-[0-9]*[0-9]")") was complete: ${victims[*]}"
    start_clock
    kill -KILL "${victims[@]}"
    wait_background 30
    ((rc != 0)) || fail "exit code 0, expected a failure"
    expect_output "apgasrun: place [45] \\(node node3(, pid [0-9]+)?\\) was killed by signal 9"
    expect_nodes_empty
    job 600 "$root/launch/apgasrun" -n 4 "$program" "${program_args[@]}" --resume "$ckpt"
    ((rc == 0)) || fail "the resume on 4 places exited $rc"
    expect_output "resumed from $ckpt/ckpt-[0-9]+"
    expect_output " verified "
    ;;
  different_build)
    [[ -x "$other_build" ]] || { echo "no other build at '$other_build'" >&2; exit 2; }
    cluster_up
    # Each node's own directory appears at the same path on every node (netns-cluster's local).
    dir="/run/apgas-netns/$name"
    base="$(basename "$program")"
    cp "$program" "$dir/node1/$base"
    cp "$program" "$dir/node2/$base"
    cp "$other_build" "$dir/node3/$base"
    job 60 "${on_cluster[@]}" "$dir/local/$base" ok
    ((rc != 0)) || fail "exit code 0, expected the job refused"
    expect_output "^apgas: the places run different builds of the program, .*: places 0-3 run build [0-9a-f]+; places 4-5 run build [0-9a-f]+$"
    expect_output "^apgas: place 4 \(on node3\) runs $dir/local/$base, build [0-9a-f]+, not place 0's build"
    expect_nodes_empty
    ;;
  unreachable)
    unreachable_up
    job 30 ip netns exec "$client" "$root/launch/apgasrun" --hostfile "$work/hosts" "$program"
    ((rc != 0)) || fail "exit code 0, expected a failure"
    expect_output "192\.0\.2\.1"
    awk -v t="$took" 'BEGIN { exit !(t <= 15) }' || fail "the job took $took s, more than 15 s"
    expect_client_empty
    ;;
  stopped)
    unreachable_up
    for signal in TERM INT; do
      start_background ip netns exec "$client" "$root/launch/apgasrun" --hostfile "$work/hosts" "$program"
      # Stopped while ssh connects to the node.
      deadline=$((SECONDS + 20))
      until [[ -n "$(pids_named "$client" ssh)" ]]; do
        ((SECONDS < deadline)) || fail "ssh did not start within 20 s"
        sleep 0.1
      done
      echo "SIG$signal to apgasrun while ssh connects"
      start_clock
      kill -s "$signal" "$bg"
      wait_background 10
      ((rc != 0)) || fail "exit code 0 after SIG$signal"
      expect_client_empty
    done
    ;;
  *) usage ;;
esac
echo "passed: $case_name"
