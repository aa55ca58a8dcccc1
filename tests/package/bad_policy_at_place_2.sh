#!/bin/sh
# Runs "$@" at every place of an mpiexec job, with a bad --policy at place 2 alone: the places
# must agree to end the job (none may wait in MPI_Init for the one that stopped).
if [ "$OMPI_COMM_WORLD_RANK" = 2 ]; then exec "$@" --policy fast; fi
exec "$@"
