// bench_finish_messages: the control messages of a distributed finish (reports from the places
// that ran its activities, cleanups from its home) as the number of places and the number of
// remote asyncs per finish grow. Place 0 runs R finishes of n async_at each, spread round-robin
// over the other places (with one place they go to place 0 itself, and no message is needed).
//
//   mpiexec -n P ... bench_finish_messages [--max-asyncs N] [--budget B] [--min-finishes m]
//                    [--max-finishes M] [--broadcasts B] [--rows-only] [--watchdog-s 300]
//                    [runtime flags]
//
// Counts are the runtime's (apgas::total_message_counts), summed over the places before and
// after the R finishes; the messages of reading them are measured once (two reads in a row)
// and subtracted. Checked: every place ran exactly the asyncs sent to it.
//
// The target is O(places) and independent of n: ideally one report per remote place that
// took part and one cleanup per such place, 2 (P-1) per finish. A place that drains its asyncs
// faster than they arrive goes quiet many times; fed at least 256 by the home, it holds its
// reports until the home asks (once its own part of the finish ended): a long stream costs
// 3 (P-1), ask, report and cleanup per place.
//
// Then B broadcasts (one plain activity at every place) in two ways that take turns: under a
// plain finish (a report and a cleanup per other place) and with for_each_place, for which the
// runtime picks the SPMD finish (a report per other place, no cleanup): the last line.
#include "common.hpp"

#include <atomic>

namespace {

using namespace apgas_bench;

std::atomic<std::uint64_t> g_ran{0}; ///< asyncs run at this place

struct size_result {
  std::uint64_t asyncs = 0; ///< per finish
  std::uint64_t finishes = 0;
  double seconds = 0;             ///< all R finishes
  apgas::message_counts messages; ///< over all places, gathering noise subtracted
};

apgas::task<size_result> measure(std::uint64_t n, std::uint64_t finishes,
                                 apgas::message_counts noise) {
  const apgas::place_id p = apgas::places();
  size_result out;
  out.asyncs = n;
  out.finishes = finishes;
  const apgas::message_counts before = co_await apgas::total_message_counts();
  const auto t0 = clock::now();
  for (std::uint64_t r = 0; r < finishes; ++r) {
    co_await apgas::finish([n, p]() -> apgas::task<> {
      for (std::uint64_t i = 0; i < n; ++i) {
        const apgas::place_id to = p == 1 ? 0 : static_cast<apgas::place_id>(1 + i % (p - 1));
        co_await apgas::async_at(
            to,
            [](std::uint64_t) {
              g_ran.fetch_add(1, std::memory_order_relaxed); // the finish orders it before reads
            },
            i);
      }
    });
  }
  out.seconds = seconds_since(t0);
  out.messages = co_await apgas::total_message_counts() - before - noise;
  co_return out;
}

/// A broadcast: one plain activity at every place, R times, under a plain finish or under
/// for_each_place (which the runtime runs as an SPMD finish).
struct broadcast_result {
  double seconds = 0;             ///< all R broadcasts
  apgas::message_counts messages; ///< over all places, gathering noise subtracted
};

apgas::task<broadcast_result> measure_broadcasts(bool spmd, std::uint64_t reps,
                                                 apgas::message_counts noise) {
  broadcast_result out;
  const apgas::message_counts before = co_await apgas::total_message_counts();
  const auto t0 = clock::now();
  const auto body = [] { g_ran.fetch_add(1, std::memory_order_relaxed); };
  for (std::uint64_t r = 0; r < reps; ++r) {
    if (spmd) {
      co_await apgas::for_each_place(body);
    } else {
      co_await apgas::finish([&]() -> apgas::task<> {
        for (apgas::place_id p = 0; p < apgas::places(); ++p) co_await apgas::async_at(p, body);
      });
    }
  }
  out.seconds = seconds_since(t0);
  out.messages = co_await apgas::total_message_counts() - before - noise;
  co_return out;
}

std::uint64_t clamp_u(std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
  return std::max(lo, std::min(v, hi));
}

double per(std::uint64_t total, std::uint64_t n) {
  return static_cast<double>(total) / static_cast<double>(n);
}

} // namespace

int main(int argc, char** argv) {
  const apgas::options opts = runtime_options(argc, argv);
  flags f(argc, argv);
  const auto max_asyncs = f.get<std::uint64_t>("--max-asyncs", 1'000'000);
  // About this many asyncs per row: small finishes repeat, so that a per-finish mean means
  // something; big ones run at least --min-finishes times.
  const auto budget = f.get<std::uint64_t>("--budget", 300'000);
  const auto min_finishes = f.get<std::uint64_t>("--min-finishes", 3);
  const auto max_finishes = f.get<std::uint64_t>("--max-finishes", 300);
  const bool rows_only = f.has("--rows-only");
  const auto broadcasts = f.get<std::uint64_t>("--broadcasts", 300);
  const double watchdog_s = f.get("--watchdog-s", 300.0);
  f.done();
  const int level = init_mpi(argc, argv);

  apgas::runtime rt(opts);
  watchdog dog(rt, watchdog_s);
  watchdog::phase() = "finishes";
  std::pair<broadcast_result, broadcast_result> bcast; // plain finish, for_each_place
  const auto results = rt.run([&]() -> apgas::task<std::vector<size_result>> {
    // Noise of gathering: two gathers in a row (the pattern is the same every time).
    const apgas::message_counts a = co_await apgas::total_message_counts();
    const apgas::message_counts noise = co_await apgas::total_message_counts() - a;
    std::vector<size_result> rows;
    co_await measure(100, 3, noise); // warm-up: allocations, MPI queues
    std::uint64_t sent = 100 * 3;
    for (std::uint64_t n = 1; n <= max_asyncs; n *= 10) {
      const std::uint64_t r = clamp_u(budget / n, min_finishes, max_finishes);
      rows.push_back(co_await measure(n, r, noise));
      sent += n * r;
    }
    // Broadcasts, the two ways taking turns (after one of each as a warm-up).
    co_await measure_broadcasts(false, 1, noise);
    co_await measure_broadcasts(true, 1, noise);
    sent += 2 * apgas::places();
    for (int half = 0; half < 2; ++half) {
      const broadcast_result plain = co_await measure_broadcasts(false, broadcasts / 2, noise);
      const broadcast_result spmd = co_await measure_broadcasts(true, broadcasts / 2, noise);
      bcast.first.seconds += plain.seconds;
      bcast.first.messages += plain.messages;
      bcast.second.seconds += spmd.seconds;
      bcast.second.messages += spmd.messages;
      sent += 2 * (broadcasts / 2) * apgas::places();
    }
    // Every async ran exactly once, somewhere.
    std::uint64_t ran = 0;
    for (apgas::place_id q = 0; q < apgas::places(); ++q)
      ran += co_await apgas::at(q, [] { return g_ran.load(std::memory_order_relaxed); });
    if (ran != sent) fail(fmt::format("{} asyncs sent but {} ran", sent, ran));
    co_return rows;
  });

  if (rt.here() == 0) {
    if (!rows_only) {
      fmt::print("bench_finish_messages: control messages per finish (finish at place 0, its "
                 "asyncs round-robin over the other places)\n");
      fmt::print("  {}\n", describe(rt, level));
      fmt::print("  ideal: one report + one cleanup per place the finish reached = 2 x min(asyncs, "
                 "places - 1)\n\n");
      fmt::print("| places | asyncs/finish | finishes | reports/finish | asks/finish | "
                 "cleanups/finish | control/finish | ideal | MPI msgs/finish | us/finish |\n");
      fmt::print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    }
    const std::uint64_t remote = rt.places() - 1;
    const auto ideal = [remote](const size_result& s) { return 2 * std::min(s.asyncs, remote); };
    for (const size_result& s : results) {
      const apgas::message_counts& m = s.messages;
      fmt::print("| {} | {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} | {:.1f} | {:.1f} |\n",
                 rt.places(), s.asyncs, s.finishes, per(m.finish_reports_sent, s.finishes),
                 per(m.finish_asks_sent, s.finishes), per(m.finish_cleanups_sent, s.finishes),
                 per(m.finish_control_sent(), s.finishes), ideal(s),
                 per(m.mpi_messages_sent, s.finishes),
                 s.seconds / static_cast<double>(s.finishes) * 1e6);
    }
    // O(places) and independent of n: no row above twice the ideal.
    bool pass = true;
    for (const size_result& s : results)
      pass = pass && per(s.messages.finish_control_sent(), s.finishes) <=
                         2.0 * static_cast<double>(ideal(s));
    fmt::print("places {}: checked (every async ran once); target (control messages per finish "
               "<= 2 x ideal at every size): {}\n",
               rt.places(), pass ? "PASS" : "MISS");
    // The broadcast: the runtime picks the SPMD finish for for_each_place.
    const std::uint64_t b = 2 * (broadcasts / 2);
    if (b > 0) {
      const auto& [plain, spmd] = bcast;
      const std::string gain =
          spmd.messages.finish_control_sent() == 0
              ? std::string(plain.messages.finish_control_sent() == 0
                                ? "none either way (one place)"
                                : "none with for_each_place")
              : fmt::format("{:.2f}x fewer with for_each_place",
                            static_cast<double>(plain.messages.finish_control_sent()) /
                                static_cast<double>(spmd.messages.finish_control_sent()));
      fmt::print("places {}: broadcast of one activity per place, {} times: plain finish {:.2f} "
                 "control msgs and {:.1f} us per broadcast; for_each_place (SPMD finish) {:.2f} "
                 "and {:.1f} us; control messages: {}\n",
                 rt.places(), b, per(plain.messages.finish_control_sent(), b),
                 plain.seconds / b * 1e6, per(spmd.messages.finish_control_sent(), b),
                 spmd.seconds / b * 1e6, gain);
    }
    std::fflush(stdout);
  }
  return 0;
}
