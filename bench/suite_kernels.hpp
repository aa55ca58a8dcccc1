/// @file The Friendly Barriers suite's kernels (jacobi, fft, cilksort, lud, barnes_hut in
/// apps/kernels) under each scheduler, for bench_apps: apgas (suite_apgas.cpp), TBB task_group
/// and OpenMP tasks (peers/tbb_kernels.cpp, peers/omp_kernels.cpp), each in a translation unit
/// of its own (see apgas_kernels.hpp). The TBB and OpenMP versions are the kernels' fork
/// templates with the scheduler's fork; the apgas versions their coroutine twins.
#pragma once

#include <apgas/apgas.hpp>

#include <apgas_apps/barnes_hut.hpp>
#include <apgas_apps/cilksort.hpp>
#include <apgas_apps/fft.hpp>
#include <apgas_apps/jacobi.hpp>
#include <apgas_apps/lud.hpp>

#include <cstddef>
#include <vector>

namespace apgas_bench {

/// @brief How one run of each suite kernel is called (the same under every scheduler).
struct suite_sizes {
  std::size_t jacobi_n = 1024;
  int jacobi_sweeps = 100;
  std::size_t jacobi_grain = 16; ///< rows per leaf
  std::size_t fft_n = std::size_t{1} << 20;
  apgas_apps::fft_cutoffs fft_cut{};
  std::size_t cilksort_n = 4'000'000;
  apgas_apps::cilksort_cutoffs cilksort_cut{};
  std::size_t lud_blocks = 16;
  std::size_t lud_block = 64;
  std::size_t bh_bodies = 100'000;
  double bh_theta = 0.5;
  std::size_t bh_grain = 128; ///< bodies per leaf
};

namespace apgas_runs {
std::vector<double>* jacobi(apgas::runtime& rt, apgas_apps::jacobi_grids& g, const suite_sizes& s);
void fft(apgas::runtime& rt, const apgas_apps::fft_problem& p, apgas_apps::fft_complex* out,
         const suite_sizes& s);
void cilksort(apgas::runtime& rt, int* v, int* tmp, const suite_sizes& s);
void lud(apgas::runtime& rt, apgas_apps::lud_matrix& m);
void barnes_hut(apgas::runtime& rt, const apgas_apps::bh_tree& t,
                const std::vector<apgas_apps::bh_body>& b, double* out, const suite_sizes& s);
} // namespace apgas_runs

namespace tbb_peer {
std::vector<double>* jacobi(apgas_apps::jacobi_grids& g, const suite_sizes& s);
void fft(const apgas_apps::fft_problem& p, apgas_apps::fft_complex* out, const suite_sizes& s);
void cilksort(int* v, int* tmp, const suite_sizes& s);
void lud(apgas_apps::lud_matrix& m);
void barnes_hut(const apgas_apps::bh_tree& t, const std::vector<apgas_apps::bh_body>& b,
                double* out, const suite_sizes& s);
} // namespace tbb_peer

namespace omp_peer {
std::vector<double>* jacobi(apgas_apps::jacobi_grids& g, const suite_sizes& s, unsigned threads);
void fft(const apgas_apps::fft_problem& p, apgas_apps::fft_complex* out, const suite_sizes& s,
         unsigned threads);
void cilksort(int* v, int* tmp, const suite_sizes& s, unsigned threads);
void lud(apgas_apps::lud_matrix& m, unsigned threads);
void barnes_hut(const apgas_apps::bh_tree& t, const std::vector<apgas_apps::bh_body>& b,
                double* out, const suite_sizes& s, unsigned threads);
} // namespace omp_peer

} // namespace apgas_bench
