// heat [--n N] [--epsilon e] [--max-iterations k] [--activities A] [--sync clock|finish|both]:
// 2D heat diffusion by Jacobi iteration over places. An N x N grid inside fixed borders (the
// top one at 1, the others at 0) is an apgas::dist_array_2d in blocks of rows, one per place,
// with one ghost cell around each part: the neighbouring places' rows above and below (filled
// by exchange_halo), or the fixed borders at the grid's edges. Every phase each cell becomes
// the average of its four neighbours' previous values, until the largest change of a phase is
// below epsilon; each place's rows are cut into A chunks, one activity each, kept in phases
// by a clock (--sync clock) or a finish per phase (--sync finish): see apgas_apps/stencil.hpp.
// Checked against the sequential loop: the same number of phases and the same values.
#include "apgas_apps/heat.hpp"

int main(int argc, char** argv) {
  return apgas_apps::stencil_main<apgas_apps::heat_kernel>(argc, argv);
}
