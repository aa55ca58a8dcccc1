// dist-nqueens N [--spread-depth d] [--cutoff-depth D]: N-Queens over places. Place 0 lists the
// safe placements of the top d rows; each such subtree goes to a place, round-robin, as an
// async_at that runs the local parallel kernel (one async per safe square down to row D) there
// and sends its count back to place 0 with another async_at. One finish at place 0 waits for
// all of it. Checked against the known counts and, for N <= 14 (unless --no-seq), against
// nqueens_seq at place 0.
#include "apgas_apps/cli.hpp"
#include "apgas_apps/nqueens.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int k_default_spread_depth = 2; // N x (N-2)-ish subtrees: a few per place and worker

/// The safe placements of rows [row, depth) below `b`, appended to `out`.
void list_prefixes(apgas_apps::nqueens_board& b, int n, int row, int depth,
                   std::vector<apgas_apps::nqueens_board>& out) {
  if (row == depth) {
    out.push_back(b);
    return;
  }
  for (int col = 0; col < n; ++col) {
    if (!apgas_apps::nqueens_safe(b, row, col)) continue;
    b.column[static_cast<std::size_t>(row)] = static_cast<std::int8_t>(col);
    list_prefixes(b, n, row + 1, depth, out);
  }
}

/// The counts of the subtrees, by subtree, at place 0.
using subtree_counts = std::vector<long>;

/// Runs at place 0: stores the count of subtree i. Each subtree's count arrives once, and
/// place 0 reads them after the finish that governs this activity: no lock, no atomic.
struct store_count {
  void operator()(apgas::global_ref<subtree_counts> counts, std::uint64_t i, long count) const {
    (*counts)[i] = count;
  }
};

/// Runs at the place a subtree was sent to: counts the solutions below `b` (its top `row`
/// rows placed) with the local kernel, then sends the count home. Both activities are governed
/// by the finish at place 0 that sent this one.
struct count_subtree {
  apgas::task<> operator()(apgas_apps::nqueens_board b, int n, int row, int cutoff,
                           apgas::global_ref<subtree_counts> counts, std::uint64_t i) const {
    const long count = co_await apgas_apps::nqueens_rec(b, n, row, cutoff);
    co_await apgas::async_at(counts.home(), store_count{}, counts, i, count);
  }
};

/// What a distributed run found: the total and each place's part of it.
struct dist_count {
  long total = 0;
  std::vector<long> per_place; ///< solutions found at each place
  std::vector<long> subtrees;  ///< subtrees each place counted

  template <class A>
  void serialize(A& a) { // run() hands the value to every place
    a& total& per_place& subtrees;
  }
};

apgas::task<dist_count> dist_nqueens(int n, int spread_depth, int cutoff_depth) {
  std::vector<apgas_apps::nqueens_board> prefixes;
  apgas_apps::nqueens_board root;
  list_prefixes(root, n, 0, spread_depth, prefixes);
  const apgas::place_id places = apgas::places();
  subtree_counts counts(prefixes.size(), -1); // -1: no count came back
  const apgas::global_ref<subtree_counts> counts_ref(counts);
  // One remote activity per subtree, round-robin over the places (place 0 included); each
  // sends its count back with an async_at of its own. The finish ends when every subtree is
  // counted and every count has arrived.
  co_await apgas::finish([&]() -> apgas::task<> {
    for (std::size_t i = 0; i < prefixes.size(); ++i) {
      const auto p = static_cast<apgas::place_id>(i % places);
      co_await apgas::async_at(p, count_subtree{}, prefixes[i], n, spread_depth, cutoff_depth,
                               counts_ref, static_cast<std::uint64_t>(i));
    }
  });
  if (std::find(counts.begin(), counts.end(), -1) != counts.end())
    throw std::logic_error("dist-nqueens: the finish ended before every count came back");
  dist_count d;
  d.per_place.assign(places, 0);
  d.subtrees.assign(places, 0);
  for (std::size_t i = 0; i < prefixes.size(); ++i) {
    d.total += counts[i];
    d.per_place[i % places] += counts[i];
    ++d.subtrees[i % places];
  }
  co_return d;
}

std::string join(const std::vector<long>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i == 0 ? "" : " ", v[i]);
  return s;
}

} // namespace

int main(int argc, char** argv) {
  int n = 0;
  int spread = k_default_spread_depth;
  int depth = -1; // -1: not given, which means N
  apgas_apps::cli cli(
      "dist-nqueens",
      "N-Queens over places: the safe placements of the top d rows are subtrees sent\n"
      "round-robin to the places (one async_at each), where the local kernel counts them with\n"
      "one async per safe square down to row D; each count comes back to place 0 with an\n"
      "async_at, all under one finish.");
  cli.positional("N", "board size (1 to 20)", n, 1, apgas_apps::k_nqueens_max);
  cli.option("--spread-depth", "d",
             fmt::format("rows placed at place 0 to cut the tree into subtrees (default {})",
                         k_default_spread_depth),
             spread, 0, apgas_apps::k_nqueens_max);
  cli.option("--cutoff-depth", "D",
             "rows that spawn, counted from the top; rows below run sequentially (default N)",
             depth, 0, apgas_apps::k_nqueens_max);
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    // Rows below N do not exist: larger depths act as N does.
    spread = std::min(spread, n);
    depth = depth < 0 ? n : std::min(depth, n);
    apgas_apps::report r;
    r.title = fmt::format("dist-nqueens({})", n);
    const long expected = apgas_apps::nqueens_known(n);
    dist_count result;
    r.seconds = apgas_apps::best_seconds(flags.repeat, [&] {
      result = rt.run(dist_nqueens(n, spread, depth));
      if (result.total != expected && r.failure.empty())
        r.failure = fmt::format("{} = {}, the known count is {}", r.title, result.total, expected);
    });
    if (n <= apgas_apps::k_nqueens_seq_max) {
      apgas_apps::run_seq_and_compare(r, flags, result.total, "nqueens_seq",
                                      apgas_apps::nqueens_seq, n);
    }
    long subtrees = 0;
    for (long s : result.subtrees) subtrees += s;
    r.result = result.total;
    r.verified = r.failure.empty();
    r.details.push_back(fmt::format("{} subtrees (spread depth {}) over {} place(s): "
                                    "subtrees per place [{}], solutions per place [{}]",
                                    subtrees, spread, rt.places(), join(result.subtrees),
                                    join(result.per_place)));
    r.extra.add("n", n).add("spread_depth", spread).add("cutoff_depth", depth);
    r.extra.add("subtrees", subtrees);
    r.extra.add("solutions_per_place", join(result.per_place));
    return r;
  });
}
