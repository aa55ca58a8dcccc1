// The data guide's team example: KMeans in one dimension over every place, the places' sums
// and counts combined by one allreduce per iteration.
#include <apgas/apgas.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <span>
#include <vector>

using apgas::task;

constexpr int k_clusters = 3;
constexpr std::size_t k_points = 30'000; // over all places

// Point i lies near 10, 20 or 30. Every point is a multiple of 1/128, so every sum of them is
// exact: each place computes the same centres whatever order the sums are made in.
double point(std::size_t i) { return 10.0 * double(i % 3 + 1) + (double(i / 3 % 101) - 50) / 128; }

struct result {
  std::array<double, k_clusters> centres;
  int iterations;
};

struct lloyd { // run by one activity at every place: a team's collectives are called so
  task<result> operator()() const {
    const apgas::team all = apgas::team::world();
    const auto blocks = apgas::distribution::block(k_points, all.size());
    std::vector<double> mine(blocks.local_size(all.rank())); // this place's block
    for (std::size_t j = 0; j < mine.size(); ++j) mine[j] = point(blocks.first(all.rank()) + j);

    result r{{0.0, 20.0, 40.0}, 0};
    for (bool moved = true; moved; ++r.iterations) {
      std::array<double, 2 * k_clusters> totals{}; // the sums, then the counts: one range
      for (double x : mine) {
        int best = 0;
        for (int c = 1; c < k_clusters; ++c)
          if (std::fabs(x - r.centres[c]) < std::fabs(x - r.centres[best])) best = c;
        totals[best] += x;
        totals[k_clusters + best] += 1;
      }
      co_await all.allreduce(std::span<double>(totals), apgas::sum); // in place, everywhere
      moved = false;
      for (int c = 0; c < k_clusters; ++c) {
        const double next = totals[k_clusters + c] > 0 ? totals[c] / totals[k_clusters + c]
                                                       : r.centres[c]; // an empty cluster stays
        moved = moved || next != r.centres[c];
        r.centres[c] = next;
      }
    } // every place saw the same totals: all stop after the same iteration
    co_return r;
  }
};

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const result r = rt.run([]() -> task<result> {
    const std::vector<result> each = co_await apgas::at_each_place(lloyd{});
    co_return each[0];
  });
  bool near = true;
  for (int c = 0; c < k_clusters; ++c) near = near && std::fabs(r.centres[c] - 10 * (c + 1)) < 0.5;
  if (rt.here() == 0)
    std::printf("%u place(s): centres %.2f %.2f %.2f after %d iterations\n", rt.places(),
                r.centres[0], r.centres[1], r.centres[2], r.iterations);
  return near ? 0 : 1;
}
