// bench_async_throughput: remote asyncs per second from place 0 to place 1: one finish of K
// async_at, each carrying one 8-byte argument that place 1 adds to a counter.
//
//   mpiexec -n 2 ... bench_async_throughput [--asyncs K] [--reps R] [--watchdog-s 300]
//                                           [--compare yes|no] [--from home|proxy]
//                                           [runtime flags]
//
// --compare yes (default): coalescing on and off in the same run, in pairs of reps (on, then
// off: runtime::set_coalescing at every place between the two), so that both halves of a pair
// see the machine in the same state; the ratio is the median of the pairs' ratios. The last
// line is machine-readable:
//   `RESULT compare on_asyncs_per_s=<median> off_asyncs_per_s=<median> ratio=<median ratio>`.
// --compare no: every rep with the runtime's --coalesce setting;
//   `RESULT coalesce=<yes|no> asyncs_per_s=<median over reps>`.
//
// --from proxy: the finish is still place 0's, but place 1 sends (one async_at(1, ...) starts a
// loop there) and place 0 receives: the sender is then a proxy of the finish, as every place
// but its home is (the common case of a run over many places).
//
// The time is that of the whole finish: sending K asyncs, running them at the receiver and the
// distributed termination that tells place 0 they all ended. Checked: the receiver received
// exactly K asyncs whose arguments sum to 1 + 2 + ... + K.
#include "common.hpp"

#include <atomic>

namespace {

using namespace apgas_bench;

/// What the receiving place received (each process has its own; only the receiver's move).
struct alignas(64) received_t {
  std::atomic<std::uint64_t> count{0};
  std::atomic<std::uint64_t> sum{0};
};
received_t g_received;

struct rep_result {
  double seconds = 0;
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
  apgas::message_counts messages; ///< during the finish, over all places (gathering noise included)
};

/// The remote async: adds its argument to the receiver's tally.
struct add {
  void operator()(std::uint64_t x) const {
    // relaxed: the finish orders these before the read in one_rep.
    g_received.count.fetch_add(1, std::memory_order_relaxed);
    g_received.sum.fetch_add(x, std::memory_order_relaxed);
  }
};

/// The sending loop: K remote asyncs to `to`, each with one 8-byte argument.
apgas::task<> send_all(apgas::place_id to, std::uint64_t k) {
  for (std::uint64_t i = 1; i <= k; ++i) co_await apgas::async_at(to, add{}, i);
}

/// --from proxy: the loop, started at place 1 by place 0's finish.
struct send_from_proxy {
  apgas::task<> operator()(std::uint64_t k) const { co_await send_all(0, k); }
};

apgas::task<rep_result> one_rep(std::uint64_t k, bool from_proxy) {
  rep_result out;
  const apgas::place_id receiver = from_proxy ? 0 : 1;
  const apgas::message_counts before = co_await apgas::total_message_counts();
  const auto t0 = clock::now();
  co_await apgas::finish([k, from_proxy]() -> apgas::task<> {
    if (from_proxy) co_await apgas::async_at(1, send_from_proxy{}, k);
    else co_await send_all(1, k);
  });
  out.seconds = seconds_since(t0);
  out.messages = co_await apgas::total_message_counts() - before;
  // Read and reset the receiver's tally for the next repetition.
  const auto [count, sum] = co_await apgas::at(receiver, [] {
    return std::pair<std::uint64_t, std::uint64_t>(g_received.count.exchange(0),
                                                   g_received.sum.exchange(0));
  });
  out.count = count;
  out.sum = sum;
  co_return out;
}

} // namespace

int main(int argc, char** argv) {
  const apgas::options opts = runtime_options(argc, argv);
  flags f(argc, argv);
  const auto k = f.get<std::uint64_t>("--asyncs", 1'000'000);
  const int reps = f.get("--reps", 5);
  const double watchdog_s = f.get("--watchdog-s", 300.0);
  const std::string compare_flag = f.get<std::string>("--compare", "yes");
  if (compare_flag != "yes" && compare_flag != "no") fail("--compare takes yes or no");
  const bool compare = compare_flag == "yes";
  const std::string from = f.get<std::string>("--from", "home");
  if (from != "home" && from != "proxy") fail("--from takes home or proxy");
  const bool from_proxy = from == "proxy";
  f.done();
  const int level = init_mpi(argc, argv);
  if (world_size() < 2) fail("needs at least 2 MPI ranks (mpiexec -n 2)");

  apgas::runtime rt(opts);
  watchdog dog(rt, watchdog_s);
  watchdog::phase() = "warm-up";
  // Warm-up: frame pools, coalescing buffers and MPI's shared-memory queues get allocated.
  rt.run(
      [&]() -> apgas::task<> { co_await one_rep(std::min<std::uint64_t>(k, 10'000), from_proxy); });
  std::vector<rep_result> results;     // with the runtime's setting, or coalescing on
  std::vector<rep_result> off_results; // --compare: the other half of each pair
  static const char* const rep_names[] = {"rep 0", "rep 1", "rep 2", "rep 3", "rep 4",
                                          "rep 5", "rep 6", "rep 7", "rep 8", "rep >= 9"};
  for (int r = 0; r < reps; ++r) {
    watchdog::phase() = rep_names[std::min(r, 9)];
    if (!compare) {
      results.push_back(rt.run(one_rep(k, from_proxy)));
      continue;
    }
    rt.set_coalescing(true); // every place runs this main: the switch is made at each
    results.push_back(rt.run(one_rep(k, from_proxy)));
    rt.set_coalescing(false);
    off_results.push_back(rt.run(one_rep(k, from_proxy)));
  }
  rt.set_coalescing(rt.opts().coalesce);
  watchdog::phase() = "report";

  if (rt.here() == 0) {
    fmt::print("bench_async_throughput: one finish of {} async_at({}, add 8-byte argument) "
               "from place {} ({} of the finish)\n",
               k, from_proxy ? 0 : 1, from_proxy ? 1 : 0, from_proxy ? "a proxy" : "the home");
    fmt::print("  {}\n\n", describe(rt, level));
    fmt::print("| rep | coalescing | seconds | asyncs/s | logical msgs | MPI msgs | asyncs per MPI "
               "msg |\n");
    fmt::print("|---:|---|---:|---:|---:|---:|---:|\n");
    const std::uint64_t expected_sum = k * (k + 1) / 2;
    const auto rate_of = [&](const rep_result& x, std::size_t r, bool on) {
      if (x.count != k || x.sum != expected_sum)
        fail(fmt::format("rep {}: the receiver got {} asyncs summing to {}, expected {} and {}", r,
                         x.count, x.sum, k, expected_sum));
      const double rate = static_cast<double>(k) / x.seconds;
      fmt::print("| {} | {} | {:.3f} | {:.0f} | {} | {} | {:.1f} |\n", r, on ? "on" : "off",
                 x.seconds, rate, x.messages.logical_messages_sent, x.messages.mpi_messages_sent,
                 static_cast<double>(k) / static_cast<double>(x.messages.mpi_messages_sent));
      return rate;
    };
    std::vector<double> rates, off_rates, ratios;
    for (std::size_t r = 0; r < results.size(); ++r) {
      rates.push_back(rate_of(results[r], r, compare || rt.opts().coalesce));
      if (!compare) continue;
      off_rates.push_back(rate_of(off_results[r], r, false));
      ratios.push_back(rates.back() / off_rates.back());
    }
    const summary s = summarize(rates);
    fmt::print("\nchecked: every rep delivered {} asyncs, argument sum {}\n", k, expected_sum);
    if (!compare) {
      fmt::print("median {:.0f} asyncs/s, best {:.0f}\n", s.median,
                 *std::max_element(rates.begin(), rates.end()));
      fmt::print("RESULT coalesce={} asyncs_per_s={:.0f}\n", rt.opts().coalesce ? "yes" : "no",
                 s.median);
    } else {
      const summary off = summarize(off_rates);
      const summary ratio = summarize(ratios);
      fmt::print("median asyncs/s: coalescing on {:.0f}, off {:.0f}; ratio of each pair: "
                 "median {:.1f}x, lowest {:.1f}x (target >= 10x): {}\n",
                 s.median, off.median, ratio.median, ratio.min,
                 ratio.median >= 10 ? "PASS" : "MISS");
      fmt::print("RESULT compare on_asyncs_per_s={:.0f} off_asyncs_per_s={:.0f} ratio={:.2f}\n",
                 s.median, off.median, ratio.median);
    }
    std::fflush(stdout);
  }
  return 0;
}
