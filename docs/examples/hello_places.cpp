// The README's places example: for_each_place, async_at under a finish, at_each_place.
#include <apgas/apgas.hpp>

#include <atomic>
#include <cstdio>
#include <numeric>
#include <vector>

using apgas::task;

std::atomic<long> hits{0}; // one per place: every place is a process of its own

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv); // under mpirun: one place per rank; else one place
  const long total = rt.run([]() -> task<long> {
    // One activity at every place, under the SPMD finish the runtime picks for a broadcast.
    co_await apgas::for_each_place([](long n) { hits += n; }, 10L);
    // A finish waits for remote asyncs too, wherever they run.
    co_await apgas::finish([]() -> task<> {
      for (apgas::place_id p = 0; p < apgas::places(); ++p)
        co_await apgas::async_at(p, [] { hits += 1; });
    });
    // One value from every place, all requests in flight at once.
    const std::vector<long> each = co_await apgas::at_each_place([] { return hits.load(); });
    co_return std::accumulate(each.begin(), each.end(), 0L);
  }); // every place gets the value
  if (rt.here() == 0) std::printf("%u place(s): total = %ld\n", rt.places(), total);
  return total == 11L * rt.places() ? 0 : 1;
}
