// The clocks guide's first example: an activity at every place, in lock-step phases, with
// clock-carried reductions deciding together when to stop.
#include <apgas/apgas.hpp>
#include <apgas/clock.hpp>

#include <cmath>
#include <cstdio>

using apgas::task;

double g_value = 0; // place 0's activity leaves its result here (every place is a process)
long g_phases = 0;

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  rt.run([]() -> task<> {
    co_await apgas::finish([]() -> task<> {
      apgas::clock c = co_await apgas::clock::make();
      for (apgas::place_id p = 0; p < apgas::places(); ++p)
        co_await apgas::async_at(p, apgas::clocked(c), [](apgas::clock mine) -> task<> {
          // Each place moves half-way to the mean of all places, one phase at a time. The
          // sum and the max come back from the phase's end: no message of their own.
          double x = 100.0 * apgas::here();
          long phases = 0;
          for (double change = 1; change > 1e-9; ++phases) {
            const double mean = co_await mine.advance(apgas::sum, x) / apgas::places();
            const double next = (x + mean) / 2;
            change = co_await mine.advance(apgas::max, std::abs(next - x));
            x = next;
          }
          if (apgas::here() == 0) g_value = x, g_phases = phases;
        }); // each activity's registration drops as it ends
    });     // and the maker's as the finish body ends
  });
  if (rt.here() != 0) return 0;
  const double expect = 50.0 * (rt.places() - 1);
  std::printf("%u place(s): converged to %.6f in %ld phases\n", rt.places(), g_value, g_phases);
  return std::abs(g_value - expect) < 1e-6 ? 0 : 1;
}
