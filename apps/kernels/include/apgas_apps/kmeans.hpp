/// @file KMeans by Lloyd's algorithm (the X10 benchmark suite's KMeans): N points of D
/// dimensions in one block per place, K centroids. Every iteration each place assigns its points
/// to the nearest centroid and sums them per cluster, in chunks run by its workers (finish and
/// async); one team allreduce of one contiguous range (the K x D sums, the K counts and the sum
/// of squared distances) combines the places; every place then computes the same new centroids.
/// The loop stops after max_iterations or once no centroid coordinate moved more than epsilon.
///
/// The points come from a seed alone (a counter-based generator: point i is a function of the
/// seed and i), so a place makes its own block and place 0 can make them all again for the
/// sequential check. They are clustered: K centres in [-100, 100]^D, each point near one of
/// them. Every coordinate is a multiple of 2^-12 below 2^7 in magnitude, so every sum of up to
/// 2^34 of them is exact in a double: the centroids do not depend on the order of the sums
/// (chunks, places, the allreduce's tree), and the sequential code and every place compute the
/// same ones, bit for bit. Only the sum of squared distances depends on that order.
#pragma once

#include <apgas/apgas.hpp>
#include <apgas/phase_checkpoint.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace apgas_apps {

/// @brief A KMeans run (bitwise: it travels to every place as an argument).
struct kmeans_params {
  std::uint64_t points = 0;         ///< N, over all places
  std::uint32_t dims = 0;           ///< D
  std::uint32_t clusters = 0;       ///< K, at most N
  std::uint32_t max_iterations = 0; ///< stop after this many anyway
  std::uint32_t activities = 1;     ///< chunks of points per place, one async each
  std::uint64_t seed = 0;
  double epsilon = 0; ///< stop once no coordinate moved more; negative: run max_iterations
};

/// Every coordinate is a multiple of this (see the file comment).
inline constexpr double k_kmeans_quantum = 1.0 / 4096;
/// A point's distance from its centre, per coordinate: a sum of four uniforms in [-1, 1)
/// times this (roughly normal, at most 4 x this away).
inline constexpr double k_kmeans_spread = 6.0;

/// @brief splitmix64's finaliser: a well-mixed 64-bit value of x.
inline std::uint64_t kmeans_mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// @brief A uniform value in [0, 1) from `bits`.
inline double kmeans_unit(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

/// @brief `x` rounded to a multiple of k_kmeans_quantum.
inline float kmeans_quantize(double x) {
  return static_cast<float>(std::nearbyint(x / k_kmeans_quantum) * k_kmeans_quantum);
}

/// @brief Coordinate d of hidden centre c, in [-100, 100].
inline double kmeans_centre(const kmeans_params& p, std::uint64_t c, std::uint32_t d) {
  const std::uint64_t bits = kmeans_mix(p.seed ^ kmeans_mix(c * p.dims + d + 0x5eedULL));
  return -100.0 + 200.0 * kmeans_unit(bits);
}

/// @brief Writes the D coordinates of point i to `out`.
inline void kmeans_point(const kmeans_params& p, std::uint64_t i, float* out) {
  const std::uint64_t key = kmeans_mix(p.seed + kmeans_mix(i));
  const std::uint64_t centre = key % p.clusters;
  for (std::uint32_t d = 0; d < p.dims; ++d) {
    double noise = 0;
    for (std::uint64_t r = 0; r < 4; ++r)
      noise += 2.0 * kmeans_unit(kmeans_mix(key ^ ((std::uint64_t{d} << 2 | r) + 1))) - 1.0;
    out[d] = kmeans_quantize(kmeans_centre(p, centre, d) + k_kmeans_spread * noise);
  }
}

/// @brief Points [first, first + n) into `out` (n x D floats, point after point).
inline void kmeans_generate(const kmeans_params& p, std::uint64_t first, std::uint64_t n,
                            float* out) {
  for (std::uint64_t i = 0; i < n; ++i) kmeans_point(p, first + i, out + i * p.dims);
}

/// @brief The first centroids: points 0 .. K-1 (as X10's KMeans takes them), K x D.
inline std::vector<double> kmeans_initial(const kmeans_params& p) {
  std::vector<float> first(std::size_t{p.clusters} * p.dims);
  kmeans_generate(p, 0, p.clusters, first.data());
  return {first.begin(), first.end()};
}

/// @brief What one iteration adds up: K x D coordinate sums, then K counts, then the sum of
/// the squared distances of the points to their centroids: one range, reduced at once.
inline std::size_t kmeans_totals_size(const kmeans_params& p) {
  return std::size_t{p.clusters} * (p.dims + 1) + 1;
}

/// @brief The assignment step over n points: each goes to its nearest centroid (the first of
/// equals), its coordinates added to that cluster's sums in `totals` (laid out as
/// kmeans_totals_size says), and its squared distance to the last slot. `centroids` is K x D
/// in float: the distances are computed in float, as X10's KMeans does, and the same way by
/// every caller, so every caller assigns every point alike.
inline void kmeans_assign(const float* points, std::size_t n, std::uint32_t dims, std::uint32_t k,
                          const float* centroids, double* totals) {
  double* counts = totals + std::size_t{k} * dims;
  double& sse = counts[k];
  for (std::size_t i = 0; i < n; ++i) {
    const float* x = points + i * dims;
    std::uint32_t best = 0;
    float best_distance = std::numeric_limits<float>::infinity();
    for (std::uint32_t c = 0; c < k; ++c) {
      const float* m = centroids + std::size_t{c} * dims;
      float distance = 0;
      for (std::uint32_t d = 0; d < dims; ++d) {
        const float diff = x[d] - m[d];
        distance += diff * diff;
      }
      if (distance < best_distance) {
        best_distance = distance;
        best = c;
      }
    }
    double* sum = totals + std::size_t{best} * dims;
    for (std::uint32_t d = 0; d < dims; ++d) sum[d] += x[d];
    counts[best] += 1;
    sse += best_distance;
  }
}

/// @brief The update step: each centroid becomes the mean of its points (an empty cluster
/// keeps its centroid); `as_float` gets them in float for the next assignment.
/// @return the largest move of a coordinate.
inline double kmeans_update(const kmeans_params& p, std::span<const double> totals,
                            std::vector<double>& centroids, std::vector<float>& as_float) {
  const double* counts = totals.data() + std::size_t{p.clusters} * p.dims;
  double moved = 0;
  for (std::uint32_t c = 0; c < p.clusters; ++c) {
    if (counts[c] == 0) continue;
    for (std::uint32_t d = 0; d < p.dims; ++d) {
      const std::size_t at = std::size_t{c} * p.dims + d;
      const double mean = totals[at] / counts[c];
      moved = std::max(moved, std::fabs(mean - centroids[at]));
      centroids[at] = mean;
    }
  }
  as_float.assign(centroids.begin(), centroids.end());
  return moved;
}

/// @brief What a run ends with (every place's the same, but for seconds).
struct kmeans_outcome {
  std::vector<double> centroids; ///< K x D
  std::uint32_t iterations = 0;
  double moved = 0;   ///< the largest move of the last iteration
  double sse = 0;     ///< the sum of squared distances of the last assignment
  double seconds = 0; ///< the iterations' time at this place (points made before it starts)
  std::uint32_t first_iteration = 0; ///< iterations a resumed checkpoint had done
  std::uint64_t checkpoints = 0;     ///< checkpoints saved
  std::string resumed_from;          ///< the checkpoint resumed from, if any

  template <class A>
  void serialize(A& a) {
    a& centroids& iterations& moved& sse& seconds& first_iteration& checkpoints& resumed_from;
  }
};

/// @brief Lloyd's loop, sequentially, over `points` (all N, made by kmeans_generate).
inline kmeans_outcome kmeans_seq(const kmeans_params& p, const std::vector<float>& points) {
  kmeans_outcome out;
  out.centroids = kmeans_initial(p);
  std::vector<float> as_float(out.centroids.begin(), out.centroids.end());
  std::vector<double> totals(kmeans_totals_size(p));
  while (out.iterations < p.max_iterations) {
    std::fill(totals.begin(), totals.end(), 0.0);
    kmeans_assign(points.data(), p.points, p.dims, p.clusters, as_float.data(), totals.data());
    out.moved = kmeans_update(p, totals, out.centroids, as_float);
    out.sse = totals.back();
    ++out.iterations;
    if (out.moved <= p.epsilon) break;
  }
  return out;
}

/// @brief The chunks of `count` points that a place's activities take: chunk a is
/// [lo(a), lo(a + 1)), at least one chunk (empty when the place has no points).
struct kmeans_chunks {
  std::size_t count = 0;
  std::size_t chunks = 1;
  kmeans_chunks(std::size_t n, std::uint32_t activities)
      : count(n), chunks(std::max<std::size_t>(1, std::min<std::size_t>(activities, n))) {}
  std::size_t lo(std::size_t a) const { return count * a / chunks; }
};

/// @brief This place's block of the points (apgas::distribution::block over `t`), made by
/// its workers, one chunk each.
inline apgas::task<std::vector<float>> kmeans_make_points(kmeans_params p, apgas::team t) {
  const apgas::distribution blocks = apgas::distribution::block(p.points, t.size());
  const std::size_t first = blocks.first(t.rank());
  const kmeans_chunks c(blocks.local_size(t.rank()), p.activities);
  std::vector<float> points(c.count * p.dims);
  co_await apgas::finish([&]() -> apgas::task<> {
    for (std::size_t a = 0; a < c.chunks; ++a)
      co_await apgas::async([&, a] {
        kmeans_generate(p, first + c.lo(a), c.lo(a + 1) - c.lo(a),
                        points.data() + c.lo(a) * p.dims);
      });
  });
  co_return points;
}

/// @brief Lloyd's loop over this place's `points` (its block), at every member of `t`
/// together: each iteration an assignment in p.activities chunks under a finish and one
/// allreduce. Called by one activity per member (it calls the team's collectives); `seconds`
/// is the loop's time here, from a barrier on. With `ck` (over `t`), the loop starts from its
/// resumed checkpoint, if any, and saves the centroids after the iterations where ck.due()
/// says so: the points are made again from the seed, on any number of places.
inline apgas::task<kmeans_outcome> kmeans_lloyd(kmeans_params p, const std::vector<float>& points,
                                                apgas::team t,
                                                apgas::phase_checkpoint* ck = nullptr) {
  using clock = std::chrono::steady_clock;
  const kmeans_chunks c(points.size() / p.dims, p.activities);
  kmeans_outcome out;
  out.centroids = kmeans_initial(p);
  if (ck != nullptr && ck->resuming()) {
    out.iterations = static_cast<std::uint32_t>(ck->phase());
    out.first_iteration = out.iterations;
    out.resumed_from = ck->resumed_path();
    auto centroids = apgas::saved("centroids", out.centroids);
    auto moved = apgas::saved("moved", out.moved);
    auto sse = apgas::saved("sse", out.sse);
    co_await ck->load(centroids, moved, sse);
  }
  std::vector<float> as_float(out.centroids.begin(), out.centroids.end());
  const std::size_t size = kmeans_totals_size(p);
  // Each chunk sums into a row of its own, rows a whole number of cache lines apart: chunks
  // run on different workers, which would otherwise write to the same lines.
  const std::size_t stride = (size + 7) / 8 * 8;
  std::vector<double> partial(c.chunks * stride);
  std::vector<double> totals(size);
  co_await t.barrier(); // the clock starts once every place is here
  const auto start = clock::now();
  while (out.iterations < p.max_iterations) {
    co_await apgas::finish([&]() -> apgas::task<> {
      for (std::size_t a = 0; a < c.chunks; ++a)
        co_await apgas::async([&, a] {
          double* row = partial.data() + a * stride;
          std::fill(row, row + size, 0.0);
          kmeans_assign(points.data() + c.lo(a) * p.dims, c.lo(a + 1) - c.lo(a), p.dims, p.clusters,
                        as_float.data(), row);
        });
    });
    std::fill(totals.begin(), totals.end(), 0.0);
    for (std::size_t a = 0; a < c.chunks; ++a)
      for (std::size_t j = 0; j < size; ++j) totals[j] += partial[a * stride + j];
    co_await t.allreduce(std::span<double>(totals), apgas::sum);
    out.moved = kmeans_update(p, totals, out.centroids, as_float);
    out.sse = totals.back();
    ++out.iterations;
    if (out.moved <= p.epsilon) break; // every place sees the same move: all stop together
    if (ck != nullptr && out.iterations < p.max_iterations && co_await ck->due()) {
      auto centroids = apgas::saved("centroids", out.centroids);
      auto moved = apgas::saved("moved", out.moved);
      auto sse = apgas::saved("sse", out.sse);
      co_await ck->save(out.iterations, centroids, moved, sse);
    }
  }
  if (ck != nullptr) out.checkpoints = ck->saved_count();
  out.seconds = std::chrono::duration<double>(clock::now() - start).count();
  co_return out;
}

/// @brief One place's share of a run over every place: its points, then Lloyd's loop. Every
/// place calls it once, as one activity (at_each_place).
struct kmeans_at_place {
  apgas::task<kmeans_outcome> operator()(kmeans_params p) const {
    const apgas::team world = apgas::team::world();
    const std::vector<float> points = co_await kmeans_make_points(p, world);
    co_return co_await kmeans_lloyd(p, points, world);
  }
};

} // namespace apgas_apps
