// The places guide's example: data at places. A place_local vector at every place, a global_ref
// to a counter at place 0, and what a global_ref used away from its home throws.
#include <apgas/apgas.hpp>

#include <atomic>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <vector>

using apgas::task;

using cells = apgas::place_local<std::vector<long>>;  // one vector per place, one handle
using counter = apgas::global_ref<std::atomic<long>>; // one counter, at its home place

std::atomic<long> g_total{0}; // every place has one (a process each); place 0's is used

struct add_to { // what runs at the counter's home
  void operator()(counter to, long n) const { *to += n; }
};

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const long total = rt.run([]() -> task<long> {
    // Four cells at every place, each made there: init runs at each place with its id.
    const cells c =
        co_await cells::make([](apgas::place_id p) { return std::vector<long>(4, p + 1); });
    const counter total(g_total); // refers to place 0's g_total (this activity runs at place 0)
    // The handles travel as arguments: each place adds its cells to the counter at its home.
    co_await apgas::for_each_place(
        [](cells mine, counter to) -> task<> {
          const std::vector<long>& v = mine.get(); // this place's vector
          const long sum = std::accumulate(v.begin(), v.end(), 0L);
          co_await apgas::finish(
              [&]() -> task<> { co_await apgas::async_at(to.home(), add_to{}, to, sum); });
        },
        c, total);
    // A global_ref works only at its home: elsewhere it throws bad_place, naming both places.
    const auto read = [](counter t) { return t->load(); };
    if (apgas::places() > 1) {
      try {
        co_await apgas::at(1, read, total);
      } catch (const apgas::bad_place& e) {
        std::printf("%s\n", e.what());
      }
    }
    try {
      co_await apgas::at(0, [] { return counter()->load(); }); // a null one throws too
    } catch (const std::invalid_argument& e) {
      std::printf("%s\n", e.what());
    }
    co_await c.destroy(); // the vectors go, at every place
    co_return total->load();
  });
  if (rt.here() == 0) std::printf("%u place(s): total = %ld\n", rt.places(), total);
  const long expect = 2L * rt.places() * (rt.places() + 1); // 4 x (1 + 2 + ... + places)
  return total == expect ? 0 : 1;
}
