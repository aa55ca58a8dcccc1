// bench_uts_sha1: the SHA-1 implementations of UTS side by side, in one run:
//  1. hashes per second of each on UTS's input (a 20-byte state and a 4-byte index): chained
//     (every hash's input is the one before's output, as down a tree's path) and siblings (16
//     children of one node, independent, as the search hashes them);
//  2. the sequential UTS of one tree (T1L by default) with each: nodes per second, and the ratio
//     to the portable SHA-1 (the kind the UTS reference implementation ships).
// Every search is checked against the tree's published size. Times are the thread's CPU time
// (the best of --reps), so that other jobs on the machine do not count.
//
//   bench_uts_sha1 [--tree T1|T1L|T3] [--reps R] [--hashes N] [--skip-oneshot]
#include "../machine_state.hpp"
#include "apgas_apps/uts.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace uts = apgas_apps::uts;

/// This thread's CPU time: on a machine that other jobs share, the time the search took when
/// it ran, not the time it waited for a core.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

template <class F>
double best_seconds(int reps, F&& f) {
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < reps; ++i) {
    const double start = cpu_seconds();
    f();
    best = std::min(best, cpu_seconds() - start);
  }
  return best;
}

struct row {
  std::string name;
  double chained_per_second = 0; ///< each hash's input is the one before's output
  double hashes_per_second = 0;  ///< siblings: independent hashes
  double nodes_per_second = 0;
  bool verified = false;
};

template <class Hash>
row measure(const uts::tree& t, std::uint64_t expected, int reps, std::uint64_t hashes,
            bool search) {
  row r;
  r.name = Hash::k_name;
  uts::digest d{};
  const double chained = best_seconds(reps, [&] {
    for (std::uint64_t i = 0; i < hashes; ++i) Hash::child(d, static_cast<std::uint32_t>(i), d);
  });
  r.chained_per_second = static_cast<double>(hashes) / chained;
  // Siblings, 16 at a time: independent of each other, as the search hashes them.
  uts::digest parent{};
  std::uint8_t mix = 0;
  const double siblings = best_seconds(reps, [&] {
    uts::digest out[16];
    for (std::uint64_t i = 0; i < hashes; i += 16) {
      uts::children_of<Hash>(parent, static_cast<std::uint32_t>(i), 16, out);
      mix ^= out[0][0] ^ out[5][1] ^ out[10][2] ^ out[15][3];
      parent[0] = mix; // a little dependence, so that nothing is hoisted out of the loop
    }
  });
  if ((d[0] ^ mix) == 0x5A) std::fputs("", stdout); // keeps the results alive
  r.hashes_per_second = static_cast<double>(hashes) / siblings;
  if (!search) return r;
  uts::result res;
  const double ss = best_seconds(reps, [&] { res = uts::search_seq<Hash>(t); });
  r.nodes_per_second = static_cast<double>(res.nodes) / ss;
  r.verified = expected == 0 || res.nodes == expected;
  return r;
}

uts::tree_params sample(std::string_view name) {
  uts::tree_params p;
  if (name == "T3") {
    p.type = uts::tree_type::binomial;
    p.b0 = 2000;
    p.nonleaf_prob = 0.124875;
    p.nonleaf_bf = 8;
    p.seed = 42;
    return p;
  }
  p.type = uts::tree_type::geometric;
  p.shape = uts::geo_shape::fixed;
  p.b0 = 4;
  p.gen_mx = name == "T1" ? 10 : 13;
  p.seed = name == "T1" ? 19 : 29;
  return p;
}

} // namespace

int main(int argc, char** argv) {
  std::string tree_name = "T1L";
  int reps = 3;
  std::uint64_t hashes = 20'000'000;
  bool oneshot = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--tree" && i + 1 < argc) tree_name = argv[++i];
    else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--hashes" && i + 1 < argc) hashes = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--skip-oneshot") oneshot = false;
    else {
      fmt::print(stderr, "usage: bench_uts_sha1 [--tree T1|T1L|T3] [--reps R] [--hashes N] "
                         "[--skip-oneshot]\n");
      return 2;
    }
  }
  if (tree_name != "T1" && tree_name != "T1L" && tree_name != "T3") {
    fmt::print(stderr, "bench_uts_sha1: unknown tree '{}' (T1, T1L or T3)\n", tree_name);
    return 2;
  }
  const uts::tree_params p = sample(tree_name);
  const uts::tree t(p);
  fmt::print("UTS sequential search of {} ({} nodes) and SHA-1 on its 24-byte input, best of {} "
             "(CPU time)\n",
             p.describe(), p.known_nodes(), reps);
  apgas_bench::print_machine_state();
  std::vector<row> rows;
  rows.push_back(measure<uts::sha1_portable>(t, p.known_nodes(), reps, hashes, true));
  rows.push_back(measure<uts::sha1_avx512>(t, p.known_nodes(), reps, hashes, true));
  rows.push_back(measure<uts::sha1_shani>(t, p.known_nodes(), reps, hashes, true));
  rows.push_back(measure<uts::sha1_openssl_block>(t, p.known_nodes(), reps, hashes, true));
  rows.push_back(measure<uts::sha1_openssl>(t, p.known_nodes(), reps, hashes, true));
  rows.push_back(measure<uts::sha1_evp>(t, p.known_nodes(), reps, hashes, true));
  // SHA1() fetches the digest on every call: too slow for a whole tree in reasonable time.
  if (oneshot) rows.push_back(measure<uts::sha1_oneshot>(t, 0, 1, hashes / 10, false));
  const row& base = rows.front();
  fmt::print("{:<16} {:>16} {:>18} {:>10} {:>16} {:>10}  {}\n", "sha1", "M hashes/s chain",
             "M hashes/s sibling", "vs port.", "M nodes/s (seq)", "vs port.", "check");
  bool ok = true;
  for (const row& r : rows) {
    const bool searched = r.nodes_per_second > 0;
    fmt::print("{:<16} {:>16.2f} {:>18.2f} {:>9.2f}x {:>16} {:>10}  {}\n", r.name,
               r.chained_per_second / 1e6, r.hashes_per_second / 1e6,
               r.hashes_per_second / base.hashes_per_second,
               searched ? fmt::format("{:.2f}", r.nodes_per_second / 1e6) : "-",
               searched ? fmt::format("{:.2f}x", r.nodes_per_second / base.nodes_per_second) : "-",
               searched ? (r.verified ? "verified" : "WRONG SIZE") : "");
    ok = ok && (!searched || r.verified);
  }
  fmt::print("UTS uses {}: {:.2f}x the portable SHA-1's nodes per second (target: 2x)\n",
             uts::sha1_fast::k_name, rows[1].nodes_per_second / base.nodes_per_second);
  return ok ? 0 : 1;
}
