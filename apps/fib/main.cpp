// fib N [--cutoff C]: parallel Fibonacci, one async per call above the cutoff. Checked against
// an O(N) loop and (unless --no-seq) against fib_seq, whose time gives the speedup.
#include "apgas_apps/cli.hpp"
#include "apgas_apps/fib.hpp"
#include <fmt/format.h>

#include <cstdint>
#include <vector>

namespace {

constexpr int k_max_n = 92; // fib(92) is the largest that fits in a long

/// The asyncs fib(n, cutoff) spawns: one per call with n >= 2 and n >= cutoff. Counted over
/// the call tree with one entry per distinct n, so it costs O(n), not a run of its own.
std::uint64_t fib_asyncs(int n, int cutoff) {
  std::vector<std::uint64_t> asyncs(static_cast<std::size_t>(n) + 1, 0);
  for (int m = 2; m <= n; ++m) {
    const auto i = static_cast<std::size_t>(m);
    asyncs[i] = m < cutoff ? 0 : 1 + asyncs[i - 1] + asyncs[i - 2];
  }
  return asyncs[static_cast<std::size_t>(n)];
}

/// An independent reference. Unsigned: the loop computes fib(n + 1), which overflows a long
/// for n = 92.
long fib_loop(int n) {
  std::uint64_t a = 0;
  std::uint64_t b = 1;
  for (int i = 0; i < n; ++i) {
    const std::uint64_t next = a + b;
    a = b;
    b = next;
  }
  return static_cast<long>(a);
}

} // namespace

int main(int argc, char** argv) {
  int n = 0;
  int cutoff = 0;
  apgas_apps::cli cli("fib", "Parallel Fibonacci: each call above the cutoff does\n"
                             "finish { async a = fib(n-1); b = fib(n-2); }, a measure of the "
                             "cost of a spawn.");
  cli.positional("N", "which Fibonacci number (0 to 92)", n, 0, k_max_n);
  cli.option("--cutoff", "C", "calls with n < C run fib_seq (default 0: one async per call)",
             cutoff, 0, k_max_n + 1);
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    apgas_apps::report r;
    r.title = fmt::format("fib({})", n);
    const long expected = fib_loop(n);
    long result = 0;
    r.seconds = apgas_apps::best_seconds(flags.repeat, [&] {
      result = rt.run(apgas_apps::fib(n, cutoff));
      if (result != expected && r.failure.empty())
        r.failure = fmt::format("{} = {}, expected {}", r.title, result, expected);
    });
    apgas_apps::run_seq_and_compare(r, flags, result, "fib_seq", apgas_apps::fib_seq, n);
    const std::uint64_t tasks = fib_asyncs(n, cutoff);
    r.result = result;
    r.verified = r.failure.empty();
    r.work = apgas_apps::work_amount{static_cast<double>(tasks), "tasks"};
    r.extra.add("n", n).add("cutoff", cutoff).add("tasks", tasks);
    return r;
  });
}
