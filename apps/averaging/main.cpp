// averaging [--n N] [--epsilon e] [--max-iterations k] [--activities A] [--sync clock|finish|both]:
// the uClocks paper's one-dimensional iterative averaging over places. Points 0 .. N+1, the two
// ends fixed (0 and 1): the N points between them are an apgas::dist_array in one block per
// place, with one ghost cell on each side of each part: the neighbouring places' end points
// (filled by exchange_halo), or the fixed ends. Every phase each point becomes the average of
// its two neighbours' previous values, until the largest change of a phase is below epsilon;
// each place's points are cut into A chunks, one activity each, kept in phases by a clock
// (--sync clock) or a finish per phase (--sync finish): see apgas_apps/stencil.hpp.
// Checked against the sequential loop: the same number of phases and the same values.
#include "apgas_apps/averaging.hpp"

int main(int argc, char** argv) {
  return apgas_apps::stencil_main<apgas_apps::averaging_kernel>(argc, argv);
}
