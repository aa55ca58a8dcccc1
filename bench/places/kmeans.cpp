// bench_kmeans: seconds per KMeans iteration, apgas (the kernel of apps/kmeans: each place
// assigns its points in chunks under a finish, then one team allreduce) against plain MPI
// (the same points and the same assignment loop on one thread per rank, then MPI_Allreduce in
// place), in the same job.
//
//   launch/apgasrun -n P --threads 1 bench_kmeans [--points N] [--dims D] [--clusters K]
//                   [--iterations I] [--activities A] [--rounds R] [--seed S]
//
// Both run I iterations (no convergence test) from the same first centroids over the same
// points (the app's generator, block p at rank p, made once). Each round runs the MPI code
// and a runtime of its own for apgas, one after the other, which first alternating (MPI's peer
// runs while no runtime exists, see common.hpp); many short rounds, so that the two take turns
// often (the machine's speed drifts), and the median round. Both results are checked: the same
// centroids (the sums are exact, so bit for bit) and the same sum of squared distances within 1e-9.
// Target: apgas at most 1.1x.
#include "common.hpp"
#include <apgas_apps/kmeans.hpp>

#include <cmath>
#include <span>

namespace {

using namespace apgas_bench;
using apgas_apps::kmeans_outcome;
using apgas_apps::kmeans_params;

constexpr double k_target = 1.1;

/// The MPI peer: Lloyd's loop over this rank's block, MPI_Allreduce of the totals in place.
/// Its seconds are the slowest rank's.
kmeans_outcome mpi_kmeans(const kmeans_params& p, const std::vector<float>& points) {
  const std::size_t count = points.size() / p.dims;
  kmeans_outcome out;
  out.centroids = apgas_apps::kmeans_initial(p);
  std::vector<float> as_float(out.centroids.begin(), out.centroids.end());
  std::vector<double> totals(apgas_apps::kmeans_totals_size(p));
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock::now();
  while (out.iterations < p.max_iterations) {
    std::fill(totals.begin(), totals.end(), 0.0);
    apgas_apps::kmeans_assign(points.data(), count, p.dims, p.clusters, as_float.data(),
                              totals.data());
    MPI_Allreduce(MPI_IN_PLACE, totals.data(), static_cast<int>(totals.size()), MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
    out.moved = apgas_apps::kmeans_update(p, totals, out.centroids, as_float);
    out.sse = totals.back();
    ++out.iterations;
  }
  double seconds = seconds_since(t0);
  MPI_Allreduce(&seconds, &out.seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

/// This process's block of the points, made once for both codes (so that a round costs
/// little more than its iterations, and rounds can be many and short).
std::vector<float> g_points;

/// The apgas kernel's loop over g_points, at one place.
struct lloyd_here {
  apgas::task<kmeans_outcome> operator()(kmeans_params p) const {
    co_return co_await apgas_apps::kmeans_lloyd(p, g_points, apgas::team::world());
  }
};

/// The apgas kernel at every place; its seconds are the slowest place's.
kmeans_outcome apgas_kmeans(apgas::runtime& rt, const kmeans_params& p) {
  return rt.run([p]() -> apgas::task<kmeans_outcome> {
    std::vector<kmeans_outcome> each = co_await apgas::at_each_place(lloyd_here{}, p);
    for (std::size_t i = 1; i < each.size(); ++i) {
      if (each[i].centroids != each[0].centroids)
        throw std::runtime_error(fmt::format("place {} ended with other centroids", i));
      each[0].seconds = std::max(each[0].seconds, each[i].seconds);
    }
    co_return std::move(each[0]);
  });
}

void check_same(const kmeans_outcome& mpi, const kmeans_outcome& mine) {
  if (mine.iterations != mpi.iterations || mine.centroids != mpi.centroids)
    fail("apgas and MPI ended with different centroids");
  if (!(std::fabs(mine.sse - mpi.sse) <= 1e-9 * std::fabs(mpi.sse)))
    fail(fmt::format("sums of squared distances differ: apgas {}, MPI {}", mine.sse, mpi.sse));
}

} // namespace

int main(int argc, char** argv) {
  const apgas::options opts = runtime_options(argc, argv);
  flags f(argc, argv);
  kmeans_params p;
  p.points = f.get<std::uint64_t>("--points", 1U << 20);
  p.dims = f.get<std::uint32_t>("--dims", 4);
  p.clusters = f.get<std::uint32_t>("--clusters", 8);
  p.max_iterations = f.get<std::uint32_t>("--iterations", 5);
  p.activities = f.get<std::uint32_t>("--activities", 8);
  p.seed = f.get<std::uint64_t>("--seed", 1);
  p.epsilon = -1; // a fixed number of iterations
  const int rounds = f.get("--rounds", 21);
  const double watchdog_s = f.get("--watchdog-s", 600.0);
  f.done();
  if (p.dims < 1 || p.clusters < 1 || p.max_iterations < 1 || p.activities < 1 || rounds < 1 ||
      p.points < p.clusters || p.points > (std::uint64_t{1} << 34)) {
    std::fprintf(stderr, "--dims, --clusters, --iterations, --activities and --rounds must be at "
                         "least 1, --points at least --clusters and at most 2^34\n");
    return 2;
  }
  const int level = init_mpi(argc, argv);
  const apgas::distribution blocks =
      apgas::distribution::block(p.points, static_cast<std::uint32_t>(world_size()));
  const auto rank = static_cast<std::uint32_t>(world_rank());
  g_points.resize(blocks.local_size(rank) * p.dims);
  apgas_apps::kmeans_generate(p, blocks.first(rank), blocks.local_size(rank), g_points.data());

  std::vector<double> mpi_s, apgas_s;
  std::string description;
  apgas::place_id here = 0;
  for (int round = 0; round < rounds; ++round) {
    // MPI (which runs while no runtime exists) and apgas take turns at going first: neither
    // always runs just after the other.
    const bool mpi_first = round % 2 == 0;
    kmeans_outcome mpi;
    kmeans_outcome mine;
    if (mpi_first) mpi = mpi_kmeans(p, g_points);
    {
      apgas::runtime rt(opts);
      watchdog dog(rt, watchdog_s);
      watchdog::phase() = "kmeans";
      here = rt.here();
      description = describe(rt, level);
      mine = apgas_kmeans(rt, p);
    }
    if (!mpi_first) mpi = mpi_kmeans(p, g_points);
    if (here == 0) check_same(mpi, mine);
    mpi_s.push_back(mpi.seconds / p.max_iterations);
    apgas_s.push_back(mine.seconds / p.max_iterations);
  }
  if (here != 0) return 0;
  const double mpi = summarize(mpi_s).median * 1e3;
  const double mine = summarize(apgas_s).median * 1e3;
  // The verdict goes by the rounds' own ratios (the two ran back to back), whose median moves
  // less with the machine's drift than the ratio of the two medians.
  std::vector<double> ratios;
  for (std::size_t i = 0; i < mpi_s.size(); ++i) ratios.push_back(apgas_s[i] / mpi_s[i]);
  const summary r = summarize(ratios);
  const double ratio = r.median;
  fmt::print("bench_kmeans: Lloyd's iterations over {} points x {} dims, {} clusters; apgas: {} "
             "activities per place and a team allreduce; MPI: one loop per rank and "
             "MPI_Allreduce\n  {}\n  {} iterations in each of {} rounds (median over rounds; "
             "ratio: the median of the rounds' ratios); the same centroids\n\n",
             p.points, p.dims, p.clusters, p.activities, description, p.max_iterations, rounds);
  fmt::print("| places | MPI ms/iteration | apgas ms/iteration | ratio | rounds' ratios | target "
             "|\n|---:|---:|---:|---:|---|---|\n");
  fmt::print("| {} | {:.3f} | {:.3f} | {:.3f} | {:.2f} to {:.2f} | {} (<= {:.1f}) |\n",
             world_size(), mpi, mine, ratio, r.min,
             ratios.empty() ? 0.0 : *std::max_element(ratios.begin(), ratios.end()),
             ratio <= k_target ? "pass" : "MISS", k_target);
  return 0;
}
