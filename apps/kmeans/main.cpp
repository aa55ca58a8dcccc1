// kmeans [--points N] [--dims D] [--clusters K] [--iterations I] [--epsilon e] [--activities A]
// [--seed S]: the X10 benchmark suite's KMeans, Lloyd's algorithm over places. N clustered
// points of D dimensions in one block per place, each place making its own from the seed; K
// centroids, at first the points 0 .. K-1. Every iteration each place assigns its points to
// the nearest centroid and sums them per cluster in A chunks (one async each, under a finish),
// then one team allreduce combines the sums, counts and squared distances of every place, and
// every place computes the same new centroids. The loop stops after I iterations, or once no
// centroid coordinate moved more than epsilon (the kernel: apps/kernels/.../kmeans.hpp).
// Checked against the sequential loop over the same points (made again at place 0): the same
// number of iterations and the same centroids (within 1e-9; the sums are exact, see the
// kernel), and every place ends with the centroids of place 0.
#include "apgas_apps/cli.hpp"
#include "apgas_apps/kmeans.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

using apgas_apps::kmeans_outcome;
using apgas_apps::kmeans_params;

constexpr std::uint64_t k_default_points = 200'000;
constexpr std::uint32_t k_default_dims = 4;
constexpr std::uint32_t k_default_clusters = 8;
constexpr std::uint32_t k_default_iterations = 500; // the default run converges in about 150
constexpr std::uint32_t k_default_activities = 8;
/// How far a centroid may be from the sequential one, relative to its size (at least 1): the
/// sums are exact, so it is 0 unless the assignment itself differs.
constexpr double k_centroid_tolerance = 1e-9;
/// How far the sum of squared distances may be: it is summed in a different order.
constexpr double k_sse_tolerance = 1e-9;

/// The largest difference between two sets of centroids, relative to their size (at least 1).
double centroid_error(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(a[i] - b[i]) / std::max(1.0, std::fabs(b[i])));
  return worst;
}

/// Empty if `run` matches the sequential outcome, else what differs.
std::string compare(const kmeans_outcome& run, const kmeans_outcome& seq, std::uint32_t dims) {
  if (run.iterations != seq.iterations)
    return fmt::format("{} iterations, kmeans_seq takes {}", run.iterations, seq.iterations);
  if (run.centroids.size() != seq.centroids.size())
    return fmt::format("{} coordinates, kmeans_seq gives {}", run.centroids.size(),
                       seq.centroids.size());
  for (std::size_t i = 0; i < run.centroids.size(); ++i) {
    const double a = run.centroids[i];
    const double b = seq.centroids[i];
    if (!(std::fabs(a - b) <= k_centroid_tolerance * std::max(1.0, std::fabs(b))))
      return fmt::format("centroid {} coordinate {} is {}, kmeans_seq gives {}", i / dims, i % dims,
                         a, b);
  }
  if (!(apgas_apps::relative_error(run.sse, seq.sse) <= k_sse_tolerance))
    return fmt::format("the sum of squared distances is {}, kmeans_seq gives {}", run.sse, seq.sse);
  return {};
}

/// Empty if every place ended with place 0's centroids and iteration count, else which did not.
std::string compare_places(const std::vector<kmeans_outcome>& each) {
  for (std::size_t p = 1; p < each.size(); ++p) {
    if (each[p].iterations != each[0].iterations || each[p].centroids != each[0].centroids)
      return fmt::format("place {} ended with other centroids than place 0", p);
  }
  return {};
}

/// The job's first run: as kmeans_at_place, with checkpoints (--checkpoint, --resume) of the
/// centroids between iterations.
struct checkpointed_at_place {
  apgas::task<kmeans_outcome> operator()(kmeans_params p) const {
    const apgas::team world = apgas::team::world();
    const std::vector<float> points = co_await apgas_apps::kmeans_make_points(p, world);
    // Named, never temporaries inside a co_await (GCC 12 destroys those twice). The
    // activities are left out: they do not change the result.
    const std::string program = "kmeans";
    apgas::phase_checkpoint ck = co_await apgas::phase_checkpoint::make(
        world, program, p.points, p.dims, p.clusters, p.max_iterations, p.seed, p.epsilon);
    co_return co_await apgas_apps::kmeans_lloyd(p, points, world, &ck);
  }
};

} // namespace

int main(int argc, char** argv) {
  kmeans_params prm;
  prm.points = k_default_points;
  prm.dims = k_default_dims;
  prm.clusters = k_default_clusters;
  prm.max_iterations = k_default_iterations;
  prm.activities = k_default_activities;
  prm.seed = 1;
  prm.epsilon = 0;
  apgas_apps::cli cli(
      "kmeans",
      "KMeans by Lloyd's algorithm (the X10 benchmark suite's): N clustered points of D\n"
      "dimensions in one block per place, each place making its own from the seed; K\n"
      "centroids, at first the points 0 .. K-1. Each iteration every place assigns its points\n"
      "to the nearest centroid and sums them per cluster in A chunks (one async each), then\n"
      "one team allreduce combines every place's sums and counts, and every place computes\n"
      "the same new centroids; until I iterations, or until no centroid coordinate moves more\n"
      "than epsilon. Checked against the sequential loop over the same points.");
  cli.option("--points", "N",
             fmt::format("points, all places together (default {})", k_default_points), prm.points,
             std::uint64_t{1}, std::uint64_t{1} << 34);
  cli.option("--dims", "D", fmt::format("dimensions of a point (default {})", k_default_dims),
             prm.dims, std::uint32_t{1}, std::uint32_t{1024});
  cli.option("--clusters", "K",
             fmt::format("centroids, at most N (default {})", k_default_clusters), prm.clusters,
             std::uint32_t{1}, std::uint32_t{1} << 16);
  cli.option("--iterations", "I",
             fmt::format("stop after I iterations anyway (default {})", k_default_iterations),
             prm.max_iterations, std::uint32_t{1}, std::uint32_t{1} << 30);
  cli.option("--epsilon", "e",
             "stop once no centroid coordinate moves more than e (default 0: until none moves)",
             prm.epsilon, 0.0, 1e6);
  cli.option(
      "--activities", "A",
      fmt::format("activities (chunks of points) per place (default {})", k_default_activities),
      prm.activities, std::uint32_t{1}, std::uint32_t{1} << 20);
  cli.option("--seed", "S", "seed of the points (default 1)", prm.seed, std::uint64_t{0},
             std::numeric_limits<std::uint64_t>::max());
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    if (prm.clusters > prm.points)
      throw apgas::usage_error(
          fmt::format("--clusters {} is more than --points {}", prm.clusters, prm.points));
    apgas_apps::report r;
    r.title = fmt::format("kmeans({} points, {} dims, {} clusters) iterations", prm.points,
                          prm.dims, prm.clusters);
    kmeans_outcome best;
    kmeans_outcome checkpointed; // the first run's, which took part in checkpoints
    bool first = true;
    for (int i = 0; i < flags.repeat; ++i) {
      const std::vector<kmeans_outcome> each =
          rt.run([&]() -> apgas::task<std::vector<kmeans_outcome>> {
            if (i == 0) co_return co_await apgas::at_each_place(checkpointed_at_place{}, prm);
            co_return co_await apgas::at_each_place(apgas_apps::kmeans_at_place{}, prm);
          });
      if (r.failure.empty()) r.failure = compare_places(each);
      kmeans_outcome got = each.front();
      for (const kmeans_outcome& o : each) got.seconds = std::max(got.seconds, o.seconds);
      if (first) checkpointed = got;
      // A resumed run did fewer iterations: it is the one reported.
      if (first || (checkpointed.resumed_from.empty() && got.seconds < best.seconds))
        best = std::move(got);
      first = false;
    }

    std::vector<float> points; // made once, outside the timed calls of the sequential loop
    if (flags.run_seq) {
      points.resize(prm.points * prm.dims);
      apgas_apps::kmeans_generate(prm, 0, prm.points, points.data());
    }
    kmeans_outcome seq;
    const auto seq_iterations = apgas_apps::run_seq_and_compare(
        r, flags, best.iterations, "kmeans_seq",
        [&](const kmeans_params& in) {
          seq = apgas_apps::kmeans_seq(in, points);
          return seq.iterations;
        },
        prm);
    double error = 0;
    if (seq_iterations) {
      if (r.failure.empty()) r.failure = compare(best, seq, prm.dims);
      error = centroid_error(best.centroids, seq.centroids);
    }

    const std::uint32_t iterations_run = best.iterations - best.first_iteration;
    const double per_iteration = best.seconds / std::max<std::uint32_t>(iterations_run, 1);
    if (!best.resumed_from.empty()) r.seq_seconds.reset(); // no speedup of a part of the loop
    const bool converged = best.moved <= prm.epsilon;
    r.result = best.iterations;
    r.verified = r.failure.empty();
    r.seconds = best.seconds;
    r.work = apgas_apps::work_amount{
        static_cast<double>(prm.points) * static_cast<double>(iterations_run), "points"};
    r.details.push_back(fmt::format(
        "{} points x {} dims over {} place(s) x {} activities, {} clusters: {} iterations "
        "({}), {:.3f} ms each, sum of squared distances {:.6g}",
        prm.points, prm.dims, rt.places(), prm.activities, prm.clusters, best.iterations,
        converged ? fmt::format("converged, last move {:.3g}", best.moved)
                  : fmt::format("stopped, last move {:.3g}", best.moved),
        per_iteration * 1e3, best.sse));
    if (seq_iterations)
      r.details.push_back(fmt::format("kmeans_seq: {} iterations, centroids within {:.3g} of "
                                      "these, every place the same",
                                      seq.iterations, error));
    if (!best.resumed_from.empty())
      r.details.push_back(fmt::format("resumed from {} after iteration {}", best.resumed_from,
                                      best.first_iteration));
    if (checkpointed.checkpoints != 0)
      r.details.push_back(fmt::format("{} checkpoint(s) saved", checkpointed.checkpoints));
    r.extra.add("checkpoints", checkpointed.checkpoints)
        .add("resumed_iteration", best.first_iteration);
    r.extra.add("points", prm.points).add("dims", prm.dims).add("clusters", prm.clusters);
    r.extra.add("activities", prm.activities).add("seed", prm.seed).add("epsilon", prm.epsilon);
    r.extra.add("iterations", best.iterations).add("converged", converged);
    r.extra.add("last_move", best.moved).add("sse", best.sse);
    r.extra.add("seconds_per_iteration", per_iteration);
    if (seq_iterations) r.extra.add("centroid_error", error);
    return r;
  });
}
