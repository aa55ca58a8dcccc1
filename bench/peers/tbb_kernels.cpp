// TBB task_group versions of the app kernels (see tbb_kernels.hpp), in a translation unit of
// their own like the OpenMP peer and the apgas runs.
#include "tbb_kernels.hpp"

#include <apgas_apps/fib.hpp>
#include <apgas_apps/flat_loop.hpp>
#include <apgas_apps/integrate.hpp>
#include <apgas_apps/nqueens.hpp>
#include <apgas_apps/quicksort.hpp>
#include <tbb/task_group.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace apgas_bench::tbb_peer {

void flat_loop(std::uint32_t* out, std::uint64_t n) {
  tbb::task_group g;
  for (std::uint64_t i = 0; i < n; ++i) g.run([out, i] { out[i] = apgas_apps::loop_value(i); });
  g.wait();
}

long fib(int n, int cutoff) {
  if (n < 2) return n;
  if (n < cutoff) return apgas_apps::fib_seq(n);
  long a = 0;
  long b = 0;
  tbb::task_group g;
  g.run([&a, n, cutoff] { a = fib(n - 1, cutoff); });
  b = fib(n - 2, cutoff);
  g.wait();
  return a + b;
}

namespace {

double integrate_rec(double l, double fl, double r, double fr, double area, double cutoff_width) {
  if (r - l < cutoff_width) return apgas_apps::integrate_seq_rec(l, fl, r, fr, area);
  const apgas_apps::integrate_step s(l, fl, r, fr);
  if (apgas_apps::converged(l, s.c, r, s.both(), area)) return s.both();
  double right = 0;
  double left = 0;
  tbb::task_group g;
  g.run([&right, &s, r, fr, cutoff_width] {
    right = integrate_rec(s.c, s.fc, r, fr, s.right_area, cutoff_width);
  });
  left = integrate_rec(l, fl, s.c, s.fc, s.left_area, cutoff_width);
  g.wait();
  return right + left;
}

} // namespace

double integrate(double n, double cutoff_width) {
  return integrate_rec(0.0, apgas_apps::integrate_f(0.0), n, apgas_apps::integrate_f(n), 0.0,
                       cutoff_width);
}

namespace {

// Calls are qualified: ADL on nqueens_board would also find apgas_apps::nqueens_rec.
long nqueens_rec(apgas_apps::nqueens_board b, int n, int row, int cutoff_depth) {
  if (row == n) return 1;
  if (row >= cutoff_depth) return apgas_apps::nqueens_seq_rec(b, n, row);
  std::array<long, apgas_apps::k_nqueens_max> counts{};
  tbb::task_group g;
  for (int col = 0; col < n; ++col) {
    if (!apgas_apps::nqueens_safe(b, row, col)) continue;
    apgas_apps::nqueens_board child = b;
    child.column[static_cast<std::size_t>(row)] = static_cast<std::int8_t>(col);
    g.run([&counts, child, n, row, cutoff_depth, col] {
      counts[static_cast<std::size_t>(col)] =
          tbb_peer::nqueens_rec(child, n, row + 1, cutoff_depth);
    });
  }
  g.wait();
  long total = 0;
  for (long c : counts) total += c;
  return total;
}

} // namespace

long nqueens(int n, int cutoff_depth) {
  return tbb_peer::nqueens_rec(apgas_apps::nqueens_board{}, n, 0, cutoff_depth);
}

namespace {

template <class T>
void quicksort_rec(T* a, std::size_t n, std::size_t cutoff) {
  if (n <= cutoff || n < 2) {
    apgas_apps::quicksort_seq(a, n);
    return;
  }
  const std::size_t p = apgas_apps::quicksort_partition(a, n);
  tbb::task_group g;
  g.run([a, p, cutoff] { quicksort_rec(a, p, cutoff); });
  quicksort_rec(a + p, n - p, cutoff);
  g.wait();
}

} // namespace

void quicksort(int* a, std::size_t n, std::size_t cutoff) { quicksort_rec(a, n, cutoff); }

} // namespace apgas_bench::tbb_peer

// ---- the Friendly Barriers suite (suite_kernels.hpp) ----------------------------------------

#include "../suite_kernels.hpp"

namespace apgas_bench::tbb_peer {

namespace {
/// a as a task, b inline, then wait: the shape of apgas's finish_all under help-first.
struct tbb_fork {
  template <class A, class B>
  void operator()(const A& a, const B& b) const {
    tbb::task_group g;
    g.run([&a] { a(); });
    b();
    g.wait();
  }
};
} // namespace

std::vector<double>* jacobi(apgas_apps::jacobi_grids& g, const suite_sizes& s) {
  return &apgas_apps::jacobi(g, s.jacobi_sweeps, s.jacobi_grain, tbb_fork{});
}
void fft(const apgas_apps::fft_problem& p, apgas_apps::fft_complex* out, const suite_sizes& s) {
  apgas_apps::fft(p.in.data(), out, p.n, 1, p.twiddles.data(), p.n, s.fft_cut, tbb_fork{});
}
void cilksort(int* v, int* tmp, const suite_sizes& s) {
  apgas_apps::cilksort(v, tmp, s.cilksort_n, s.cilksort_cut, tbb_fork{});
}
void lud(apgas_apps::lud_matrix& m) { apgas_apps::lud(m, tbb_fork{}); }
void barnes_hut(const apgas_apps::bh_tree& t, const std::vector<apgas_apps::bh_body>& b,
                double* out, const suite_sizes& s) {
  apgas_apps::barnes_hut(t, b, s.bh_theta, out, s.bh_grain, tbb_fork{});
}

} // namespace apgas_bench::tbb_peer
