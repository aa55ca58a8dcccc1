// uts [-t type] [-a shape] [-d depth] [-b b0] [-r seed] [-q prob] [-m children] [-f shift]:
// the Unbalanced Tree Search benchmark over every place and worker, balanced by GLB's lifeline
// protocol (<apgas/glb.hpp>). The tree's root is place 0's initial bag; every other place
// starts empty and gets its work by stealing. Checked against the published size of the sample
// trees (T1, T1L, T3) and against the sequential search of the same binary (unless --no-seq),
// which also gives the parallel efficiency.
#include <apgas/glb.hpp>

#include "apgas_apps/cli.hpp"
#include "apgas_apps/uts.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <limits>
#include <string>
#include <vector>

namespace {

namespace uts = apgas_apps::uts;

/// Each place's initial bag: the whole tree at place 0, nothing elsewhere.
struct make_bag {
  uts::bag operator()(const uts::tree_params& p) const {
    const uts::tree t(p);
    return apgas::here() == 0 ? uts::bag::whole(t) : uts::bag(t);
  }
};

/// This thread's CPU time: what the sequential search cost, whatever else the machine ran.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string rate(double per_second) { return fmt::format("{:.2f} M nodes/s", per_second / 1e6); }

std::string join_items(const apgas::glb::run_stats& s) {
  std::string out;
  for (const auto& p : s.places) out += fmt::format("{}{}", out.empty() ? "" : " ", p.items);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  uts::tree_params p;
  int type = static_cast<int>(p.type);
  int shape = static_cast<int>(p.shape);
  apgas_apps::cli cli(
      "uts", "Unbalanced Tree Search (UTS) over places with lifeline-based global load balancing:\n"
             "the tree grows from place 0's root, and places and workers steal subtrees from each\n"
             "other. Node states are SHA-1 digests, as the UTS specification says. Sample trees:\n"
             "  T1   -t 1 -a 3 -d 10 -b 4 -r 19         (4,130,071 nodes)\n"
             "  T1L  -t 1 -a 3 -d 13 -b 4 -r 29         (102,181,082 nodes)\n"
             "  T3   -t 0 -b 2000 -q 0.124875 -m 8 -r 42 (4,112,897 nodes)\n"
             "GLB's own knobs are runtime options (--glb-n, --glb-w, --glb-l, --glb-z, ...).");
  cli.option("-t", "T", "tree type: 0 binomial, 1 geometric, 2 hybrid, 3 balanced (default 1)",
             type, 0, 3);
  cli.option("-a", "A",
             "geometric shape: 0 linear, 1 exponential decrease, 2 cyclic, 3 fixed (default 0)",
             shape, 0, 3);
  cli.option("-d", "D", "depth the geometric shape refers to (default 6)", p.gen_mx, 1, 100000);
  cli.option("-b", "B", "branching factor of the root (geometric: of every node) (default 4)", p.b0,
             0.0, 1e9);
  cli.option("-r", "R", "root seed (default 0)", p.seed, 0, 2147483647);
  cli.option("-q", "Q", "binomial: probability that a node has children (default 0.234375)",
             p.nonleaf_prob, 0.0, 1.0);
  cli.option("-m", "M", "binomial: children of a node that has some (default 4)", p.nonleaf_bf, 0,
             100);
  cli.option("-f", "F", "hybrid: geometric above depth F * D, binomial below (default 0.5)",
             p.shift_depth, 0.0, 1.0);
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    p.type = static_cast<uts::tree_type>(type);
    p.shape = static_cast<uts::geo_shape>(shape);
    apgas_apps::report r;
    r.title = fmt::format("uts({})", p.describe());
    apgas::glb::outcome<uts::result> out;
    r.seconds = apgas_apps::best_seconds(
        flags.repeat, [&] { out = rt.run(apgas::glb::run_with_stats(make_bag{}, p)); });
    const uts::result& res = out.value;
    if (const std::uint64_t known = p.known_nodes(); known != 0 && res.nodes != known)
      r.failure = fmt::format("{} = {} nodes, the published size is {}", r.title, res.nodes, known);
    uts::result seq;
    double seq_cpu = std::numeric_limits<double>::infinity(); // the best, as seq_seconds
    apgas_apps::run_seq_and_compare(
        r, flags, res.nodes, "the sequential search",
        [&seq, &seq_cpu](const uts::tree_params& tp) {
          const double start = thread_cpu_seconds();
          seq = uts::search_seq(uts::tree(tp));
          seq_cpu = std::min(seq_cpu, thread_cpu_seconds() - start);
          return seq.nodes;
        },
        p);
    if (r.seq_seconds) r.extra.add("seq_cpu_seconds", seq_cpu);
    if (r.seq_seconds && !(seq == res) && r.failure.empty())
      r.failure = fmt::format("{}: {} leaves and depth {}, the sequential search gives {} and {}",
                              r.title, res.leaves, res.max_depth, seq.leaves, seq.max_depth);
    r.result = res.nodes;
    r.verified = r.failure.empty();
    // A resumed run searched only what its checkpoint had left: its rate is of those nodes.
    const bool resumed = !out.stats.resumed_from.empty();
    const auto searched = resumed ? out.stats.total().items : res.nodes;
    r.work = apgas_apps::work_amount{static_cast<double>(searched), "nodes"};
    if (resumed)
      r.details.push_back(fmt::format("resumed from {}: {} nodes searched by this job",
                                      out.stats.resumed_from, searched));

    const double cores = static_cast<double>(rt.places()) * rt.threads();
    const double total = r.seconds > 0 ? static_cast<double>(searched) / r.seconds : 0.0;
    r.details.push_back(
        fmt::format("{} nodes, {} leaves, depth {}", res.nodes, res.leaves, res.max_depth));
    r.details.push_back(fmt::format("{} in total, {} per place, {} per worker", rate(total),
                                    rate(total / rt.places()), rate(total / cores)));
    if (r.seq_seconds) {
      const double speedup = *r.seq_seconds / r.seconds;
      r.details.push_back(fmt::format(
          "parallel efficiency {:.1f}% on {} core(s): speedup {:.2f} over the sequential search "
          "({}, {:.3f} s)",
          100.0 * speedup / cores, cores, speedup,
          rate(static_cast<double>(res.nodes) / *r.seq_seconds), *r.seq_seconds));
      r.extra.add("efficiency", speedup / cores);
    }
    const apgas::glb::place_stats t = out.stats.total();
    r.details.push_back(
        fmt::format("balance: nodes per place [{}], busiest place {:.3f} x the mean; the "
                    "places had work {:.1f}% of the run",
                    join_items(out.stats), out.stats.imbalance(),
                    100.0 * t.busy_seconds / (t.busy_seconds + t.idle_seconds)));
    const std::string table = out.stats.table();
    for (std::size_t at = 0; at < table.size();) {
      const std::size_t end = table.find('\n', at);
      r.details.push_back(table.substr(at, end - at));
      at = end == std::string::npos ? table.size() : end + 1;
    }
    r.extra.add("tree", p.describe()).add("leaves", res.leaves).add("depth", res.max_depth);
    r.extra.add("nodes_per_place", join_items(out.stats));
    r.extra.add("imbalance", out.stats.imbalance());
    r.extra.add("steals_attempted", t.steals_attempted)
        .add("steals_successful", t.steals_successful);
    r.extra.add("lifeline_requests", t.lifeline_requests_sent);
    r.extra.add("lifeline_activations", t.lifeline_activations);
    // GLB's own messages: steal requests, their answers (one each) and lifeline registrations.
    const double per_place = 1.0 / static_cast<double>(rt.places());
    r.extra.add("glb_messages_per_place",
                static_cast<double>(2 * t.steals_attempted + t.lifeline_requests_sent) * per_place);
    r.extra.add("lifeline_activations_per_place",
                static_cast<double>(t.lifeline_activations) * per_place);
    r.extra.add("glb_seconds", out.stats.seconds);
    r.extra.add("checkpoints", out.stats.checkpoints);
    if (out.stats.checkpoints > 0) {
      const auto n = static_cast<double>(out.stats.checkpoints);
      r.extra.add("checkpoint_pause_ms", 1e3 * out.stats.checkpoint_pause_seconds / n);
      r.extra.add("checkpoint_write_ms", 1e3 * out.stats.checkpoint_write_seconds / n);
    }
    if (resumed) r.extra.add("resume_seconds", out.stats.resume_seconds);
    // The share of the run the places had work (1.0: no place ever waited for work).
    r.extra.add("busy_fraction", t.busy_seconds / (t.busy_seconds + t.idle_seconds));
    return r;
  });
}
