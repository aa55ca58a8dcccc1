// The aggregators guide's example: a histogram spread over places, filled by many tiny remote
// updates that an apgas::aggregator sends in batches.
#include <apgas/apgas.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <vector>

using apgas::task;

constexpr std::uint32_t k_bins = 1024; // bins of the whole histogram, split over the places

struct histogram { // this place's share of the bins
  std::array<std::atomic<long>, k_bins> count{};
};
histogram here_bins; // one per place: every place is a process of its own

struct add_one { // the update, run at the place that owns the bin
  void operator()(histogram& h, std::uint32_t bin) const {
    h.count[bin].fetch_add(1, std::memory_order_relaxed);
  }
};

int main(int argc, char** argv) {
  apgas::runtime rt(argc, argv);
  const long total = rt.run([]() -> task<long> {
    const auto bins = co_await apgas::at_each_place([] { return apgas::global_ref(here_bins); });
    // Every place adds 1,000,000 values; bin b belongs to place b % places().
    co_await apgas::for_each_place(
        [](std::vector<apgas::global_ref<histogram>> to) -> task<> {
          co_await apgas::finish([&]() -> task<> { // governs the batches sent to other places
            auto agg = co_await apgas::make_aggregator<add_one, histogram, std::uint32_t>();
            std::uint64_t x = apgas::here() + 1;
            for (int i = 0; i < 1'000'000; ++i) {
              x = x * 6364136223846793005ULL + 1442695040888963407ULL; // a simple random stream
              const auto bin = static_cast<std::uint32_t>(x >> 54);    // 0 .. 1023
              agg.push(to[bin % to.size()], bin);
            }
          }); // agg sends what it still holds as it goes; the finish waits for every update
        },
        bins);
    // Every update counted once, wherever it went.
    const std::vector<long> sums = co_await apgas::at_each_place([] {
      long s = 0;
      for (const auto& c : here_bins.count) s += c.load();
      return s;
    });
    long all = 0;
    for (long s : sums) all += s;
    co_return all;
  });
  if (rt.here() == 0) std::printf("%u place(s): %ld updates counted\n", rt.places(), total);
  return total == 1'000'000L * rt.places() ? 0 : 1;
}
