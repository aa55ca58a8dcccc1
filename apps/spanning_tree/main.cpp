// spanning-tree <random N M | torus N | hypercube N | bintree N> [--method on-demand|depth-limited]
// [--depth-limit D] [--seed S]: builds a spanning tree of a generated graph with apgas (the
// sequential DFS split on demand, or the depth-limited parallel DFS with overflow stages), times
// it against the sequential explicit-stack DFS, and checks every tree.
//
// The graph lives at place 0, and so does the traversal: under several places the others only
// serve (as for fib). Generating the graph is a run of its own, so that a failure there (out of
// memory) ends the run at every place rather than leaving the others waiting.
#include "apgas_apps/cli.hpp"
#include "apgas_apps/graph.hpp"
#include "apgas_apps/spanning_tree.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace {

using apgas_apps::vertex_id;

constexpr vertex_id k_root = 0;
constexpr unsigned k_max_depth_limit = 1000000000;

enum class graph_kind : std::uint8_t { random, torus, hypercube, bintree };

/// How apgas builds the tree (see spanning_tree.hpp).
enum class method : std::uint8_t { on_demand, depth_limited };

constexpr std::array<std::string_view, 4> k_kind_names = {"random", "torus", "hypercube",
                                                          "bintree"};

std::string_view kind_name(graph_kind k) { return k_kind_names[static_cast<std::size_t>(k)]; }

/// N or M, the numbers after GRAPH. Their range depends on the graph, which the shared cli has
/// already read when it reads them (positionals are filled in order): `kind` points to it.
struct graph_number {
  std::uint64_t value = 0; ///< 0: not given (every accepted M is at least 1)
  const graph_kind* kind = nullptr;
  bool is_m = false; ///< M (random's picks per vertex) rather than N
};

/// What the generators accept (graph.hpp checks the same bounds and would throw).
struct number_range {
  std::uint64_t lo;
  std::uint64_t hi;
};

number_range n_range(graph_kind k) {
  switch (k) {
  case graph_kind::random:
    return {1, apgas_apps::k_max_vertices - 1};
  case graph_kind::torus:
    return {1, 65535}; // side^2 vertices must fit in a vertex_id
  case graph_kind::hypercube:
    return {0, 31};
  case graph_kind::bintree:
    return {1, 31};
  }
  return {0, 0};
}

constexpr number_range k_picks_range = {1, 1024}; // M of random

} // namespace

// The shared cli reads positionals through parse_number<T>; these specializations let it read
// the graph's name and its per-graph numbers, so that every mistake in them is a usage error
// found while parsing (exit status 2, one message from place 0).
namespace apgas_apps {

template <>
graph_kind parse_number<graph_kind>(std::string_view /*what*/, std::string_view text,
                                    graph_kind /*lo*/, graph_kind /*hi*/) {
  for (std::size_t i = 0; i < k_kind_names.size(); ++i) {
    if (text == k_kind_names[i]) return static_cast<graph_kind>(i);
  }
  throw apgas::usage_error(
      fmt::format("unknown graph '{}' (expected random, torus, hypercube or bintree)", text));
}

template <>
method parse_number<method>(std::string_view /*what*/, std::string_view text, method /*lo*/,
                            method /*hi*/) {
  if (text == "on-demand") return method::on_demand;
  if (text == "depth-limited") return method::depth_limited;
  throw apgas::usage_error(
      fmt::format("unknown method '{}' (expected on-demand or depth-limited)", text));
}

template <>
graph_number parse_number<graph_number>(std::string_view what, std::string_view text,
                                        graph_number lo, graph_number /*hi*/) {
  const graph_kind kind = *lo.kind;
  if (lo.is_m && kind != graph_kind::random) {
    throw apgas::usage_error(
        fmt::format("{} takes one number (N), got a second one: '{}'", kind_name(kind), text));
  }
  const number_range r = lo.is_m ? k_picks_range : n_range(kind);
  graph_number out = lo;
  out.value =
      parse_number<std::uint64_t>(fmt::format("{} {}", kind_name(kind), what), text, r.lo, r.hi);
  return out;
}

} // namespace apgas_apps

namespace {

struct graph_spec {
  graph_kind kind = graph_kind::random;
  graph_number n{0, &kind, false};
  graph_number m{0, &kind, true};
  std::uint64_t seed = 1;

  graph_spec() = default;
  graph_spec(const graph_spec&) = delete; // n and m point to kind
  graph_spec& operator=(const graph_spec&) = delete;

  std::string name() const {
    if (kind == graph_kind::random) return fmt::format("random({},{})", n.value, m.value);
    return fmt::format("{}({})", kind_name(kind), n.value);
  }
};

/// The root task of the first run: builds the graph and sizes the parent array (at place 0).
/// @return the seconds the generator took.
apgas::task<double> generate(const graph_spec& spec, apgas_apps::csr_graph& g,
                             std::vector<vertex_id>& parent) {
  // The sizes are in range (checked while parsing), so the casts keep them.
  const auto n = spec.n.value;
  const double seconds = apgas_apps::seconds_of([&] {
    switch (spec.kind) {
    case graph_kind::random:
      g = apgas_apps::make_random(n, static_cast<std::uint32_t>(spec.m.value), spec.seed);
      break;
    case graph_kind::torus:
      g = apgas_apps::make_torus(static_cast<std::uint32_t>(n), spec.seed);
      break;
    case graph_kind::hypercube:
      g = apgas_apps::make_hypercube(static_cast<std::uint32_t>(n), spec.seed);
      break;
    case graph_kind::bintree:
      g = apgas_apps::make_bintree(static_cast<std::uint32_t>(n), spec.seed);
      break;
    }
  });
  parent.resize(g.vertex_count());
  co_return seconds;
}

/// Empty if `parent` is a spanning tree of g rooted at k_root, else what is wrong with it.
std::string check(const apgas_apps::csr_graph& g, const std::vector<vertex_id>& parent,
                  std::string_view who, std::uint64_t* tree_edges = nullptr) {
  const auto c = apgas_apps::check_spanning_tree(g, k_root, parent);
  if (tree_edges) *tree_edges = c.tree_edges;
  return c.ok ? std::string() : fmt::format("{} tree check failed: {}", who, c.error);
}

} // namespace

int main(int argc, char** argv) {
  graph_spec spec;
  method how = method::on_demand;
  unsigned depth_limit = apgas_apps::k_default_depth_limit;
  apgas_apps::cli cli(
      "spanning-tree",
      "Spanning tree rooted at vertex 0 of a generated graph, twice: with apgas and\n"
      "sequentially (an explicit-stack DFS). Checks every tree. The graph lives at place 0,\n"
      "where the traversal runs. apgas methods:\n"
      "  on-demand      the sequential DFS, whose oldest half of the stack goes to another\n"
      "                 worker when that one asks for work (default)\n"
      "  depth-limited  a parallel DFS whose recursion stops after D levels; vertices\n"
      "                 reached there start the next stage\n"
      "\n"
      "Graphs (each vertex's edge order shuffled with seed S):\n"
      "  random N M     N vertices, each picks M random neighbours (2*M*N directed edges;\n"
      "                 the first pick of vertex i > 0 is an earlier vertex: always connected)\n"
      "  torus N        N x N 2D torus, degree 4\n"
      "  hypercube N    2^N vertices, degree N\n"
      "  bintree N      complete binary tree of 2^N - 1 vertices");
  cli.positional("GRAPH", "random, torus, hypercube or bintree", spec.kind, graph_kind::random,
                 graph_kind::bintree);
  cli.positional("N", "vertices (random), side (torus), dimension (hypercube), levels (bintree)",
                 spec.n, spec.n, spec.n);
  cli.positional("M", "random only: neighbours each vertex picks (1 to 1024)", spec.m, spec.m,
                 spec.m, /*required=*/false);
  cli.option("--method", "on-demand|depth-limited", "how apgas builds the tree (see above)", how,
             method::on_demand, method::depth_limited);
  cli.option("--depth-limit", "D",
             fmt::format("depth-limited: recursion budget of each stage (default {}; 0 = one BFS "
                         "level a stage)",
                         apgas_apps::k_default_depth_limit),
             depth_limit, 0U, k_max_depth_limit);
  cli.option("--seed", "S", "graph generator seed (default 1)", spec.seed, std::uint64_t{0},
             std::numeric_limits<std::uint64_t>::max());

  // The shared cli has no check after the last positional, so a missing M is found in the
  // body, at every place alike and before any run (the cli prints it once, exit status 2).
  const auto body = [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    if (spec.kind == graph_kind::random && spec.m.value == 0)
      throw apgas::usage_error("random takes two numbers, N and M");
    const bool lead = rt.here() == 0; // the graph, its trees and the report are place 0's
    apgas_apps::report r;
    apgas_apps::csr_graph g;
    std::vector<vertex_id> parent;
    const double gen_seconds = rt.run([&] { return generate(spec, g, parent); });

    // Every run is collective; place 0 resets (untimed) and checks the tree of each. A check
    // that throws is held until the last run, so that place 0 still takes part in every one.
    apgas_apps::spanning_tree_stats best;
    std::uint64_t tree_edges = 0;
    std::exception_ptr check_error;
    r.seconds = std::numeric_limits<double>::infinity();
    for (int i = 0; i < flags.repeat; ++i) {
      if (lead) apgas_apps::reset_parents(parent);
      apgas_apps::spanning_tree_stats stats;
      const double s = apgas_apps::seconds_of([&] {
        if (how == method::on_demand)
          rt.run([&] { return apgas_apps::spanning_tree_on_demand(g, k_root, parent); });
        else
          stats = rt.run([&] { return apgas_apps::spanning_tree(g, k_root, parent, depth_limit); });
      });
      if (!lead || check_error) continue;
      if (s < r.seconds) {
        r.seconds = s;
        best = stats;
      }
      try {
        std::string failure = check(g, parent, "apgas", &tree_edges);
        if (r.failure.empty()) r.failure = std::move(failure);
      } catch (...) {
        check_error = std::current_exception();
      }
    }
    if (check_error) std::rethrow_exception(check_error);
    if (!lead) return r; // only place 0's report counts

    if (flags.run_seq) {
      std::vector<vertex_id> seq_parent(g.vertex_count());
      r.seq_seconds = std::numeric_limits<double>::infinity();
      for (int i = 0; i < flags.repeat; ++i) {
        apgas_apps::reset_parents(seq_parent);
        r.seq_seconds = std::min(*r.seq_seconds, apgas_apps::seconds_of([&] {
          apgas_apps::spanning_tree_seq(g, k_root, seq_parent);
        }));
        std::string failure = check(g, seq_parent, "sequential");
        if (r.failure.empty()) r.failure = std::move(failure);
      }
    }

    const std::string name = spec.name();
    const std::uint32_t vertices = g.vertex_count();
    const std::uint64_t edges = g.edge_count();
    r.title = fmt::format("spanning_tree({}) edges", name);
    r.result = tree_edges;
    r.verified = r.failure.empty();
    r.work = apgas_apps::work_amount{static_cast<double>(edges), "edges"};
    r.extra.add("graph", name).add("vertices", vertices).add("edges", edges);
    r.extra.add("method", how == method::on_demand ? "on-demand" : "depth-limited");
    if (how == method::depth_limited) {
      r.extra.add("stages", best.stages).add("overflowed", best.overflowed);
      r.extra.add("depth_limit", depth_limit);
    }
    r.extra.add("seed", spec.seed);
    r.extra.add("gen_seconds", gen_seconds);
    r.extra.add("medges_per_second",
                r.seconds > 0 ? static_cast<double>(edges) / r.seconds / 1e6 : 0.0);
    r.details.push_back(fmt::format("{}: {} vertices, {} directed edges, generated in {:.3f} s "
                                    "(seed {})",
                                    name, vertices, edges, gen_seconds, spec.seed));
    if (how == method::depth_limited)
      r.details.push_back(fmt::format("depth limit {}: {} stage{} after the first traversal, {} "
                                      "vertices overflowed (fastest run)",
                                      depth_limit, best.stages, best.stages == 1 ? "" : "s",
                                      best.overflowed));
    else r.details.push_back("on-demand splitting: the sequential DFS, split when a worker asks");
    return r;
  };
  return cli.run(argc, argv, body);
}
