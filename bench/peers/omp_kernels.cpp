// OpenMP-task versions of the app kernels (see omp_kernels.hpp). Tasks are tied (the
// default), shared results are written by the child and read after the taskwait.
#include "omp_kernels.hpp"

#include <apgas_apps/fib.hpp>
#include <apgas_apps/flat_loop.hpp>
#include <apgas_apps/integrate.hpp>
#include <apgas_apps/nqueens.hpp>
#include <apgas_apps/quicksort.hpp>
#include <omp.h>

#include <array>
#include <cmath>
#include <cstdint>

namespace apgas_bench::omp_peer {

namespace {

long fib_rec(int n, int cutoff) {
  if (n < 2) return n;
  if (n < cutoff) return apgas_apps::fib_seq(n);
  long a = 0;
  long b = 0;
#pragma omp task default(none) shared(a) firstprivate(n, cutoff)
  a = fib_rec(n - 1, cutoff);
  b = fib_rec(n - 2, cutoff);
#pragma omp taskwait
  return a + b;
}

double integrate_rec(double l, double fl, double r, double fr, double area, double cutoff_width) {
  if (r - l < cutoff_width) return apgas_apps::integrate_seq_rec(l, fl, r, fr, area);
  const apgas_apps::integrate_step s(l, fl, r, fr);
  if (apgas_apps::converged(l, s.c, r, s.both(), area)) return s.both();
  double right = 0;
  double left = 0;
#pragma omp task default(none) shared(right, s) firstprivate(r, fr, cutoff_width)
  right = integrate_rec(s.c, s.fc, r, fr, s.right_area, cutoff_width);
  left = integrate_rec(l, fl, s.c, s.fc, s.left_area, cutoff_width);
#pragma omp taskwait
  return right + left;
}

// Calls are qualified: ADL on nqueens_board would also find apgas_apps::nqueens_rec.
long nqueens_rec(apgas_apps::nqueens_board b, int n, int row, int cutoff_depth) {
  if (row == n) return 1;
  if (row >= cutoff_depth) return apgas_apps::nqueens_seq_rec(b, n, row);
  std::array<long, apgas_apps::k_nqueens_max> counts{};
  for (int col = 0; col < n; ++col) {
    if (!apgas_apps::nqueens_safe(b, row, col)) continue;
    apgas_apps::nqueens_board child = b;
    child.column[static_cast<std::size_t>(row)] = static_cast<std::int8_t>(col);
#pragma omp task default(none) shared(counts) firstprivate(child, n, row, cutoff_depth, col)
    counts[static_cast<std::size_t>(col)] = omp_peer::nqueens_rec(child, n, row + 1, cutoff_depth);
  }
#pragma omp taskwait
  long total = 0;
  for (long c : counts) total += c;
  return total;
}

void quicksort_rec(int* a, std::size_t n, std::size_t cutoff) {
  if (n <= cutoff || n < 2) {
    apgas_apps::quicksort_seq(a, n);
    return;
  }
  const std::size_t p = apgas_apps::quicksort_partition(a, n);
#pragma omp task default(none) firstprivate(a, p, cutoff)
  quicksort_rec(a, p, cutoff);
  quicksort_rec(a + p, n - p, cutoff);
#pragma omp taskwait
}

/// Runs `root` as the one initial task of a team of `threads` threads.
template <class F>
void run_in_team(unsigned threads, F&& root) {
  omp_set_num_threads(static_cast<int>(threads));
#pragma omp parallel default(none) shared(root)
#pragma omp single
  root();
}

} // namespace

long fib(int n, int cutoff, unsigned threads) {
  long result = 0;
  run_in_team(threads, [&] { result = fib_rec(n, cutoff); });
  return result;
}

double integrate(double n, double cutoff_width, unsigned threads) {
  double result = 0;
  run_in_team(threads, [&] {
    result = integrate_rec(0.0, apgas_apps::integrate_f(0.0), n, apgas_apps::integrate_f(n), 0.0,
                           cutoff_width);
  });
  return result;
}

long nqueens(int n, int cutoff_depth, unsigned threads) {
  long result = 0;
  run_in_team(threads, [&] {
    result = omp_peer::nqueens_rec(apgas_apps::nqueens_board{}, n, 0, cutoff_depth);
  });
  return result;
}

void quicksort(int* a, std::size_t n, std::size_t cutoff, unsigned threads) {
  run_in_team(threads, [&] { quicksort_rec(a, n, cutoff); });
}

void flat_loop(std::uint32_t* out, std::uint64_t n, unsigned threads) {
  run_in_team(threads, [&] {
    for (std::uint64_t i = 0; i < n; ++i) {
#pragma omp task default(none) firstprivate(out, i)
      out[i] = apgas_apps::loop_value(i);
    }
#pragma omp taskwait
  });
}

} // namespace apgas_bench::omp_peer

// ---- the Friendly Barriers suite (suite_kernels.hpp) ----------------------------------------

#include "../suite_kernels.hpp"

namespace apgas_bench::omp_peer {

namespace {
/// a as a task, b inline, then taskwait.
struct omp_fork {
  template <class A, class B>
  void operator()(const A& a, const B& b) const {
    const A* task = &a;
#pragma omp task default(none) firstprivate(task)
    (*task)();
    b();
#pragma omp taskwait
  }
};
} // namespace

std::vector<double>* jacobi(apgas_apps::jacobi_grids& g, const suite_sizes& s, unsigned threads) {
  std::vector<double>* result = nullptr;
  run_in_team(threads, [&] {
    result = &apgas_apps::jacobi(g, s.jacobi_sweeps, s.jacobi_grain, omp_fork{});
  });
  return result;
}
void fft(const apgas_apps::fft_problem& p, apgas_apps::fft_complex* out, const suite_sizes& s,
         unsigned threads) {
  run_in_team(threads, [&] {
    apgas_apps::fft(p.in.data(), out, p.n, 1, p.twiddles.data(), p.n, s.fft_cut, omp_fork{});
  });
}
void cilksort(int* v, int* tmp, const suite_sizes& s, unsigned threads) {
  run_in_team(threads,
              [&] { apgas_apps::cilksort(v, tmp, s.cilksort_n, s.cilksort_cut, omp_fork{}); });
}
void lud(apgas_apps::lud_matrix& m, unsigned threads) {
  run_in_team(threads, [&] { apgas_apps::lud(m, omp_fork{}); });
}
void barnes_hut(const apgas_apps::bh_tree& t, const std::vector<apgas_apps::bh_body>& b,
                double* out, const suite_sizes& s, unsigned threads) {
  run_in_team(threads,
              [&] { apgas_apps::barnes_hut(t, b, s.bh_theta, out, s.bh_grain, omp_fork{}); });
}

} // namespace apgas_bench::omp_peer
