#!/usr/bin/env bash
# Every program given prints its --help in lines of at most 100 columns, and exits 0.
#   help_width_check.sh PROGRAM...
set -uo pipefail
status=0
for program in "$@"; do
  help=$("$program" --help) || { echo "FAILED: $program --help exited $?"; status=1; continue; }
  long=$(awk 'length > 100' <<<"$help")
  if [[ -n "$long" ]]; then
    echo "FAILED: $program --help has lines over 100 columns:"
    echo "$long"
    status=1
  else
    echo "$(basename "$program") --help: $(wc -l <<<"$help") lines, none over 100 columns"
  fi
done
exit "$status"
