#!/bin/sh
# A stand-in for MPICH's mpiexec whose --version names Hydra on its first line and then goes on
# for a long while, as a real one may under load: apgasrun must read the whole answer before
# it decides (a `| grep -q` that stops at the first line would kill the writer with SIGPIPE,
# which pipefail turns into "not Hydra"). Only --version is answered; apgasrun's --dry-run
# never starts a job.
if [ "$1" = "--version" ]; then
  echo "HYDRA build details:"
  i=0
  while [ $i -lt 20000 ]; do
    echo "    Configure options:                        line $i of a long banner"
    i=$((i + 1))
  done
  exit 0
fi
echo "fake_hydra_long_version.sh: only --version is answered" >&2
exit 1
