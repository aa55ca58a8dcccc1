// nqueens N [--cutoff-depth D]: counts the placements of N non-attacking queens, one async per
// safe square in the top D rows. Checked against the known counts and, for N <= 14 (unless
// --no-seq), against nqueens_seq, whose time gives the speedup.
#include "apgas_apps/cli.hpp"
#include "apgas_apps/nqueens.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>

namespace {

constexpr std::uint64_t k_count_limit = 3e7; // nodes; about the whole tree for N = 14

/// Counts the asyncs nqueens(n, depth) spawns (one per safe square in the rows above
/// `depth`) by walking that part of the tree with the kernel's own safety test.
class async_counter {
public:
  async_counter(int n, int depth) : m_n(n), m_depth(depth) {}
  /// @return the count, or nullopt once it passes k_count_limit (deep trees of large N would
  /// cost as much as the run itself).
  std::optional<std::uint64_t> count() {
    apgas_apps::nqueens_board b;
    if (!walk(b, 0)) return std::nullopt;
    return m_count;
  }

private:
  bool walk(apgas_apps::nqueens_board& b, int row) {
    if (row >= m_depth || row >= m_n) return true;
    for (int col = 0; col < m_n; ++col) {
      if (!apgas_apps::nqueens_safe(b, row, col)) continue;
      if (++m_count > k_count_limit) return false;
      b.column[static_cast<std::size_t>(row)] = static_cast<std::int8_t>(col);
      if (!walk(b, row + 1)) return false;
    }
    return true;
  }
  int m_n;
  int m_depth;
  std::uint64_t m_count = 0;
};

} // namespace

int main(int argc, char** argv) {
  int n = 0;
  int depth = -1; // -1: not given, which means N
  apgas_apps::cli cli("nqueens",
                      "N-Queens: counts the placements of N non-attacking queens on an NxN "
                      "board,\none async per safe square in the top D rows, sequential below.");
  cli.positional("N", "board size (1 to 20)", n, 1, apgas_apps::k_nqueens_max);
  cli.option("--cutoff-depth", "D",
             "rows that spawn; 0 = sequential (default N: one async per safe square)", depth, 0,
             apgas_apps::k_nqueens_max);
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    // Rows below N do not exist: a larger D spawns exactly as D = N does.
    depth = depth < 0 ? n : std::min(depth, n);
    apgas_apps::report r;
    r.title = fmt::format("nqueens({})", n);
    const long expected = apgas_apps::nqueens_known(n);
    long result = 0;
    r.seconds = apgas_apps::best_seconds(flags.repeat, [&] {
      result = rt.run(apgas_apps::nqueens(n, depth));
      if (result != expected && r.failure.empty())
        r.failure = fmt::format("{} = {}, the known count is {}", r.title, result, expected);
    });
    if (n <= apgas_apps::k_nqueens_seq_max)
      apgas_apps::run_seq_and_compare(r, flags, result, "nqueens_seq", apgas_apps::nqueens_seq, n);
    r.result = result;
    r.verified = r.failure.empty();
    r.extra.add("n", n).add("cutoff_depth", depth);
    if (const auto tasks = async_counter(n, depth).count()) {
      r.work = apgas_apps::work_amount{static_cast<double>(*tasks), "tasks"};
      r.extra.add("tasks", *tasks);
    }
    return r;
  });
}
