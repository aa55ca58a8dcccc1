// bench_async_throughput: remote asyncs per second from place 0 to place 1: one finish of K
// async_at, each carrying one 8-byte argument that place 1 adds to a counter.
//
//   mpiexec -n 2 ... bench_async_throughput [--asyncs K] [--reps R] [--watchdog-s 300]
//                                           [--coalesce yes|no] [runtime flags]
//
// Coalescing is an option of the runtime (one per process), so coalescing on and off are two
// runs of this program; run_async_throughput.sh runs both and prints the ratio. The last line
// is machine-readable: `RESULT coalesce=<yes|no> asyncs_per_s=<median over reps>`.
//
// The time is that of the whole finish: sending K asyncs, running them at place 1 and the
// distributed termination that tells place 0 they all ended. Checked: place 1 received
// exactly K asyncs whose arguments sum to 1 + 2 + ... + K.
#include "common.hpp"

#include <atomic>

namespace {

using namespace apgas_bench;

/// What place 1 received (each process has its own; only place 1's move).
struct alignas(64) received_t {
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> sum{0};
};
received_t g_received;

struct rep_result {
  double seconds = 0;
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
  message_counts messages; ///< during the finish, over all places (gathering noise included)
};

apgas::task<rep_result> one_rep(std::uint64_t k) {
  rep_result out;
  const message_counts before = co_await all_counts();
  const auto t0 = clock::now();
  co_await apgas::finish([k]() -> apgas::task<> {
    for (std::uint64_t i = 1; i <= k; ++i)
      co_await apgas::async_at(1, [](std::uint64_t x) {
        // relaxed: the finish orders these before the read below.
        g_received.count.fetch_add(1, std::memory_order_relaxed);
        g_received.sum.fetch_add(x, std::memory_order_relaxed);
      }, i);
  });
  out.seconds = seconds_since(t0);
  out.messages = co_await all_counts() - before;
  // Read and reset place 1's tally for the next repetition.
  const auto [count, sum] = co_await apgas::at(1, [] {
    return std::pair<std::uint64_t, std::uint64_t>(g_received.count.exchange(0),
                                                   g_received.sum.exchange(0));
  });
  out.count = count;
  out.sum = sum;
  co_return out;
}

} // namespace

int main(int argc, char** argv) {
  const apgas::options opts = apgas::options::from_env_and_args(argc, argv);
  flags f(argc, argv);
  const auto k = f.get<std::uint64_t>("--asyncs", 1'000'000);
  const int reps = f.get("--reps", 5);
  const double watchdog_s = f.get("--watchdog-s", 300.0);
  f.done();
  const int level = init_mpi(argc, argv);
  if (world_size() < 2) fail("needs at least 2 MPI ranks (mpiexec -n 2)");

  apgas::runtime rt(opts);
  watchdog dog(rt, watchdog_s);
  watchdog::phase() = "warm-up";
  // Warm-up: frame pools, coalescing buffers and MPI's shared-memory queues get allocated.
  rt.run([&]() -> apgas::task<> {
    co_await one_rep(std::min<std::uint64_t>(k, 10'000));
  });
  std::vector<rep_result> results;
  static const char* const rep_names[] = {"rep 0", "rep 1", "rep 2", "rep 3", "rep 4",
                                          "rep 5", "rep 6", "rep 7", "rep 8", "rep >= 9"};
  for (int r = 0; r < reps; ++r) {
    watchdog::phase() = rep_names[std::min(r, 9)];
    results.push_back(rt.run(one_rep(k)));
  }
  watchdog::phase() = "report";

  if (rt.here() == 0) {
    fmt::print("bench_async_throughput: one finish of {} async_at(1, add 8-byte argument) "
               "from place 0\n",
               k);
    fmt::print("  {}\n\n", describe(rt, level));
    fmt::print("| rep | seconds | asyncs/s | logical msgs | MPI msgs | asyncs per MPI msg |\n");
    fmt::print("|---:|---:|---:|---:|---:|---:|\n");
    std::vector<double> rates;
    const std::uint64_t expected_sum = k * (k + 1) / 2;
    for (std::size_t r = 0; r < results.size(); ++r) {
      const rep_result& x = results[r];
      if (x.count != k || x.sum != expected_sum)
        fail(fmt::format("rep {}: place 1 received {} asyncs summing to {}, expected {} and {}",
                         r, x.count, x.sum, k, expected_sum));
      const double rate = static_cast<double>(k) / x.seconds;
      rates.push_back(rate);
      fmt::print("| {} | {:.3f} | {:.0f} | {} | {} | {:.1f} |\n", r, x.seconds, rate,
                 x.messages.logical, x.messages.mpi,
                 static_cast<double>(k) / static_cast<double>(x.messages.mpi));
    }
    const summary s = summarize(rates);
    fmt::print("\nchecked: every rep delivered {} asyncs, argument sum {}\n", k, expected_sum);
    fmt::print("median {:.0f} asyncs/s, best {:.0f}\n", s.median, *std::max_element(rates.begin(), rates.end()));
    fmt::print("RESULT coalesce={} asyncs_per_s={:.0f}\n", rt.opts().coalesce ? "yes" : "no",
               s.median);
    std::fflush(stdout);
  }
  return 0;
}
