# mpiexec_summary.awk: the filter apgasrun puts on mpiexec's stderr (see apgasrun).
#
# Open MPI ends a failed job with banners between lines of dashes: "Primary job terminated
# normally, but 1 process returned a non-zero exit code...", "mpiexec noticed that process rank
# 1 with PID 7 on node n1 exited on signal 9 (Killed).", and more. MPICH's mpiexec (Hydra) ends
# one with a box of "=" lines ("BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", a pid,
# an exit code) and "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)". This
# filter drops those, keeps what they say about the failed place as one line, written to the
# file `summary` (apgasrun prints it once the job has ended), and passes everything else
# through at once, line by line: the places' own output, and any banner it does not know (a
# launch error, a lost node). The line is "?" when the banners said only that a place failed
# (Open MPI does so now and then for a place killed by a signal; Hydra names no rank ever);
# apgasrun then words it from the job's exit status, and a second line "signal N NAME" gives
# the signal Hydra named, whose number is all its exit status says.
#
# Written for mawk as well as gawk: no interval expressions, no match() with captures.
#   awk -v summary=FILE -f mpiexec_summary.awk

function is_dashes(line) {
  return line ~ /^-------------------------------------------------+$/
}

# The word after `key` in `text` ("" if none), trailing punctuation of both ignored.
function word_after(text, key,   n, w, i) {
  n = split(text, w, /[ \t\n]+/)
  for (i = 1; i < n; i++) {
    sub(/[.,:]+$/, "", w[i])
    if (w[i] == key) { sub(/[.,:]+$/, "", w[i + 1]); return w[i + 1] }
  }
  return ""
}

# The first failure a banner names wins: one line from the launcher, however many banners.
function found(line) {
  if (first == "") first = line
}

# What a finished banner says, if it is one of Open MPI's ends of a failed job.
function end_banner(   text, i, rank, sig, name, code, pid) {
  text = ""
  for (i = 1; i <= n; i++) text = text " " lines[i]
  if (text ~ /mpiexec noticed that process rank [0-9]+ with PID [0-9]+ on node .* exited on signal/) {
    rank = word_after(text, "rank")
    sig = word_after(text, "signal")
    name = text
    sub(/.*exited on signal [0-9]+ *\(?/, "", name)
    sub(/\)?\.? *$/, "", name)
    pid = word_after(text, "PID") # 0 when Open MPI did not learn it
    found("place " rank " (node " word_after(text, "node") (pid != "0" ? ", pid " pid : "") \
          ") was killed by signal " sig (name != "" ? " (" name ")" : ""))
    return 1
  }
  if (text ~ /exited with non-zero status/ && text ~ /Process name: \[\[[0-9]+,[0-9]+\],[0-9]+\]/) {
    rank = text
    sub(/.*Process name: \[\[[0-9]+,[0-9]+\],/, "", rank)
    sub(/\].*/, "", rank)
    code = word_after(text, "code")
    found("place " rank " exited with code " code)
    return 1
  }
  if (text ~ /mpiexec has exited due to process rank [0-9]+/) {
    found("place " word_after(text, "rank") " (node " word_after(text, "node") \
          ") exited without shutting MPI down")
    return 1
  }
  if (text ~ /MPI_ABORT was invoked on rank [0-9]+/) {
    found("place " word_after(text, "rank") " called MPI_Abort (error code " \
          word_after(text, "errorcode") ")")
    return 1
  }
  if (text ~ /Primary job +terminated normally, but [0-9]+ process(es)? returned/ ||
      text ~ /Per user-direction, the job has been aborted/) {
    unnamed = 1 # says that a place failed, not which: another banner usually does
    return 1
  }
  return 0
}

# A held banner or box that is none of the launchers' ends, passed through as it was.
function pass_held(   i) {
  if (held_blank) { print ""; held_blank = 0 }
  print opening
  for (i = 1; i <= n; i++) print lines[i]
  fflush()
}

function is_equals(line) {
  return line ~ /^=========================================+$/
}

# Hydra's box is all about a process whose rank it does not know: nothing in it names a place.
function hydra_box_known(   i, text) {
  text = ""
  for (i = 1; i <= n; i++) text = text " " lines[i]
  if (text !~ /BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES/) return 0
  unnamed = 1
  return 1
}

# Hydra's lines after its box.
/^YOUR APPLICATION TERMINATED WITH THE EXIT STRING: / && held == "" {
  name = $0
  sub(/^YOUR APPLICATION TERMINATED WITH THE EXIT STRING: */, "", name)
  if (name ~ /\(signal [0-9]+\) *$/) {
    sig = name
    sub(/.*\(signal /, "", sig)
    sub(/\).*/, "", sig)
    sub(/ *\(signal [0-9]+\) *$/, "", name)
    if (hydra_signal == "") hydra_signal = sig " " name
  }
  unnamed = 1
  next
}
/^This typically refers to a problem with your application\.$/ && held == "" { next }
/^Please see the FAQ page for debugging suggestions$/ && held == "" { next }

{
  # Inside a held box (Hydra's, between "=" lines) or banner (Open MPI's, between dashes).
  if (held != "") {
    if ((held == "box" && is_equals($0)) || (held == "banner" && is_dashes($0))) {
      known = held == "box" ? hydra_box_known() : end_banner()
      held = ""
      if (!known) { pass_held(); print; fflush() }
    } else {
      lines[++n] = $0
    }
    next
  }
  if (is_equals($0)) {
    held = "box"
    opening = $0
    n = 0
    held_blank = blank_held # Hydra's blank line before its box goes with it
    blank_held = 0
    next
  }
  if ($0 == "") {
    # Held until the next line shows whether it opens Hydra's box.
    if (blank_held) { print ""; fflush() }
    blank_held = 1
    next
  }
  if (blank_held) { print ""; blank_held = 0 }
  if (is_dashes($0)) {
    held = "banner"
    opening = $0
    n = 0
    held_blank = 0
    next
  }
  print
  fflush()
}

END {
  if (held != "") pass_held() # cut off: show what there was
  if (blank_held) print ""
  # Only "a place failed": apgasrun words it from the job's exit status.
  if (first == "" && unnamed) first = "?"
  if (first != "") print first > summary
  if (first == "?" && hydra_signal != "") print "signal " hydra_signal > summary
}
