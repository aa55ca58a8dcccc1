// integrate [N] [--cutoff W]: adaptive quadrature of x^3 + x over [0, N], as in the X10
// work-stealing paper (Integrate(1536)). Checked against integrate_seq (unless --no-seq) and
// against the exact integral (relative 1e-9, or the kernel's discretisation bound if larger).
#include "apgas_apps/cli.hpp"
#include "apgas_apps/integrate.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace {

constexpr double k_default_n = 1536.0;
// The kernel's tolerance is absolute (1e-9): for large n it falls below the rounding error of
// the areas, so run times grow fast, and from about n = 40000 the midpoint rounds onto an end,
// the same interval recurses forever and the stack overflows.
constexpr double k_max_n = 4096.0;
constexpr double k_tolerance = 1e-9; // relative

/// How far integrate(n) may be from the exact integral. A leaf [l, r] of width w is accepted
/// when its two halves differ from the whole by less than eps; for a cubic, trapezoids err by
/// exactly w^3 f''(c) / 12, so the accepted halves err by a third of that difference: < eps/3.
/// A leaf's parent (width 2w) was not accepted, with f'' = 6x <= 6n that gives
/// w >= (eps / 3n)^(1/3), hence at most n / w leaves. The sum of their errors dominates the
/// relative 1e-9 for small n (n = 1 is off by 8e-8); the relative term covers rounding.
double exact_tolerance(double n, double exact) {
  const double eps = apgas_apps::k_integrate_epsilon;
  const double max_leaves = n * std::cbrt(3.0 * n / eps);
  return std::max(k_tolerance * std::fabs(exact), max_leaves * eps / 3.0);
}

} // namespace

int main(int argc, char** argv) {
  double n = k_default_n;
  double cutoff = 0;
  apgas_apps::cli cli("integrate",
                      "Integrate: adaptive recursive quadrature of f(x) = x^3 + x over [0, N], "
                      "one async\nper split of an interval at least W wide.");
  cli.positional(
      "N", fmt::format("upper bound of the interval (0 to {}, default {})", k_max_n, k_default_n),
      n, 0.0, k_max_n, false);
  cli.option("--cutoff", "W",
             "intervals narrower than W run integrate_seq (default 0: one async per split)", cutoff,
             0.0, 1e300);
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    apgas_apps::report r;
    r.title = fmt::format("integrate({})", n);
    const double exact = apgas_apps::integrate_exact(n);
    const double tolerance = exact_tolerance(n, exact);
    double result = 0;
    r.seconds = apgas_apps::best_seconds(flags.repeat, [&] {
      result = rt.run(apgas_apps::integrate(n, cutoff));
      if (!(std::fabs(result - exact) <= tolerance) && r.failure.empty()) {
        r.failure = fmt::format("{} = {}, exact {}: off by {:.3g}, more than {:.3g}", r.title,
                                result, exact, std::fabs(result - exact), tolerance);
      }
    });
    r.extra.add("n", n).add("cutoff", cutoff).add("exact", exact);
    r.extra.add("error", std::fabs(result - exact)).add("tolerance", tolerance);
    // Same splits, same sums in the same order: equal, barring a kernel change that
    // reassociates, hence the tolerance.
    const auto same = [](double par, double seq) {
      return seq == par || apgas_apps::relative_error(par, seq) < k_tolerance;
    };
    if (const auto seq = apgas_apps::run_seq_and_compare(r, flags, result, "integrate_seq",
                                                         apgas_apps::integrate_seq, n, same))
      r.extra.add("seq_result", *seq);
    r.result = result;
    r.verified = r.failure.empty();
    return r;
  });
}
