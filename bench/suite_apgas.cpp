// The apgas runs of the suite kernels (see suite_kernels.hpp).
#include "suite_kernels.hpp"

namespace apgas_bench::apgas_runs {

std::vector<double>* jacobi(apgas::runtime& rt, apgas_apps::jacobi_grids& g, const suite_sizes& s) {
  return rt.run(apgas_apps::jacobi(g, s.jacobi_sweeps, s.jacobi_grain)) == 0 ? &g.a : &g.b;
}

void fft(apgas::runtime& rt, const apgas_apps::fft_problem& p, apgas_apps::fft_complex* out,
         const suite_sizes& s) {
  rt.run(apgas_apps::fft(p.in.data(), out, p.n, 1, p.twiddles.data(), p.n, s.fft_cut));
}

void cilksort(apgas::runtime& rt, int* v, int* tmp, const suite_sizes& s) {
  rt.run(apgas_apps::cilksort(v, tmp, s.cilksort_n, s.cilksort_cut));
}

void lud(apgas::runtime& rt, apgas_apps::lud_matrix& m) { rt.run(apgas_apps::lud(m)); }

void barnes_hut(apgas::runtime& rt, const apgas_apps::bh_tree& t,
                const std::vector<apgas_apps::bh_body>& b, double* out, const suite_sizes& s) {
  rt.run(apgas_apps::barnes_hut(t, b, s.bh_theta, out, s.bh_grain));
}

} // namespace apgas_bench::apgas_runs
