/// @file Integrate: adaptive recursive quadrature of the cubic f(x) = x^3 + x over [0, n], as in
/// the X10 work-stealing paper (Integrate(1536)). Irregular, fine-grained divide and conquer.
#pragma once

#include <apgas/apgas.hpp>

#include <cmath>

namespace apgas_apps {

inline double integrate_f(double x) { return (x * x + 1.0) * x; }

/// @brief The exact integral of f over [0, n]: n^4/4 + n^2/2.
inline double integrate_exact(double n) { return n * n * n * n / 4.0 + n * n / 2.0; }

inline constexpr double k_integrate_epsilon = 1.0e-9;

/// @brief Stop splitting when the two halves agree with the whole within epsilon, or when the
/// interval can no longer be split in floating point (for large n the fixed epsilon falls
/// below the rounding error of the areas, and the midpoint lands on an end).
inline bool converged(double l, double c, double r, double halves, double whole) {
  return std::fabs(halves - whole) < k_integrate_epsilon || !(l < c && c < r);
}

/// @brief One step of the recursion over [l, r]: the midpoint and the trapezoid areas of the
/// two halves (shared by the sequential and the parallel versions).
struct integrate_step {
  double c, fc, left_area, right_area;
  integrate_step(double l, double fl, double r, double fr) {
    const double h = (r - l) * 0.5;
    c = l + h;
    fc = integrate_f(c);
    left_area = (fl + fc) * h * 0.5;
    right_area = (fr + fc) * h * 0.5;
  }
  double both() const { return left_area + right_area; }
};

[[gnu::noinline]] inline double integrate_seq_rec(double l, double fl, double r, double fr,
                                                  double area) {
  const integrate_step s(l, fl, r, fr);
  if (converged(l, s.c, r, s.both(), area)) return s.both();
  return integrate_seq_rec(s.c, s.fc, r, fr, s.right_area) +
         integrate_seq_rec(l, fl, s.c, s.fc, s.left_area);
}

/// @brief Sequential reference.
inline double integrate_seq(double n) {
  return integrate_seq_rec(0.0, integrate_f(0.0), n, integrate_f(n), 0.0);
}

/// @brief Parallel recursion: one async per split; below `seq_depth` levels from the leaves is
/// not known in advance, so the cutoff is an interval width: narrower intervals run sequentially
/// (0 = one async per split).
inline apgas::task<double> integrate_rec(double l, double fl, double r, double fr, double area,
                                         double cutoff_width) {
  if (r - l < cutoff_width) co_return integrate_seq_rec(l, fl, r, fr, area);
  const integrate_step s(l, fl, r, fr);
  if (converged(l, s.c, r, s.both(), area)) co_return s.both();
  auto [right, left] =
      co_await apgas::finish_all(integrate_rec(s.c, s.fc, r, fr, s.right_area, cutoff_width),
                                 integrate_rec(l, fl, s.c, s.fc, s.left_area, cutoff_width));
  co_return right + left;
}

/// @brief Parallel integral of f over [0, n].
inline apgas::task<double> integrate(double n, double cutoff_width = 0.0) {
  return integrate_rec(0.0, integrate_f(0.0), n, integrate_f(n), 0.0, cutoff_width);
}

} // namespace apgas_apps
