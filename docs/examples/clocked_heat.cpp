// The clocks guide's clocked_finish example: heat spreading along a rod. Its cells are split
// among activities that move in lock-step phases: in each phase every activity reads the
// cells of the phase before (its neighbours' too) and writes the next ones.
#include <apgas/apgas.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

using apgas::task;

constexpr int k_cells = 256; // and a fixed cell at each end: 100 degrees left, 0 right
constexpr int k_parts = 8;   // activities, whatever the number of workers
constexpr int k_steps = 1000;

// One step over cells [first, last): a plain function (see the performance guide).
double relax(const std::vector<double>& from, std::vector<double>& to, int first, int last) {
  double change = 0;
  for (int i = first; i < last; ++i) {
    to[i] = (from[i - 1] + from[i] + from[i + 1]) / 3;
    change = std::max(change, std::abs(to[i] - from[i]));
  }
  return change;
}

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  std::vector<double> a(k_cells + 2, 0.0);
  a[0] = 100.0;
  std::vector<double> b = a;
  double last_change = 0;
  rt.run([&]() -> task<> {
    co_await apgas::clocked_finish([&](apgas::clock& c) -> task<> {
      for (int part = 0; part < k_parts; ++part)
        co_await apgas::async(apgas::clocked(c), [&, part](apgas::clock mine) -> task<> {
          const int first = 1 + part * (k_cells / k_parts);
          std::vector<double>* from = &a;
          std::vector<double>* to = &b;
          for (int step = 0; step < k_steps; ++step) {
            const double change = relax(*from, *to, first, first + k_cells / k_parts);
            // Every activity has written its cells of `to`: they are the next phase's `from`.
            const double most = co_await mine.advance(apgas::max, change);
            if (part == 0) last_change = most;
            std::swap(from, to);
          }
        });
    }); // the body's registration drops as it ends; the finish waits for the activities
  });
  if (rt.here() != 0) return 0;
  std::vector<double> x(k_cells + 2, 0.0), y; // the same steps in sequence
  x[0] = 100.0;
  y = x;
  for (int step = 0; step < k_steps; ++step) {
    relax(x, y, 1, k_cells + 1);
    std::swap(x, y);
  }
  const bool same = a == x; // k_steps is even: the last phase wrote `a`
  std::printf("after %d phases: cell 1 at %.3f degrees, last change %.2e, %s\n", k_steps, a[1],
              last_change, same ? "as in sequence" : "NOT as in sequence");
  return same ? 0 : 1;
}
