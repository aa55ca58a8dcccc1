// bc [--scale S] [--edge-factor E] [--seed X] [--batch B]: betweenness centrality of an R-MAT
// graph (SSCA2 style) over every place and worker, balanced by GLB (<apgas/glb.hpp>): each
// place builds the same graph, starts with an equal slice of the source vertices, and the
// sources move between places and workers as GLB balances them (one Brandes search per item).
// Checked against the sequential computation of the same binary (unless --no-seq).
#include <apgas/glb.hpp>

#include "apgas_apps/cli.hpp"
#include "bc.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace {

/// Each place's initial bag: its slice of the sources.
struct make_bag {
  bc::bag operator()(const bc::graph_params& p) const {
    const std::uint64_t n = std::uint64_t{1} << p.scale;
    const auto h = std::uint64_t{apgas::here()};
    const auto places = std::uint64_t{apgas::places()};
    bc::bag b{p, {}};
    const auto lo = static_cast<std::uint32_t>(n * h / places);
    const auto hi = static_cast<std::uint32_t>(n * (h + 1) / places);
    if (hi > lo) b.ranges.emplace_back(lo, hi);
    return b;
  }
};

/// Builds the graph at every place, before the timed run.
struct build_graph {
  void operator()(const bc::graph_params& p) const { (void)bc::graph_of(p); }
};

/// The largest difference between two centrality vectors, relative to the largest centrality.
double max_relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 0;
  for (double x : b) scale = std::max(scale, std::fabs(x));
  double worst = 0;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const double x = i < a.size() ? a[i] : 0.0;
    const double y = i < b.size() ? b[i] : 0.0;
    worst = std::max(worst, std::fabs(x - y));
  }
  return scale == 0 ? worst : worst / scale;
}

} // namespace

int main(int argc, char** argv) {
  bc::graph_params p;
  unsigned batch = 1;
  apgas_apps::cli cli(
      "bc", "Betweenness centrality (SSCA2 style) with lifeline-based global load balancing: an\n"
            "R-MAT graph of 2^S vertices and E x 2^S edges is built at every place, and Brandes'\n"
            "algorithm runs from every vertex, one source per item of GLB's bags.");
  cli.option("--scale", "S", "2^S vertices (default 12)", p.scale, 1U, 26U);
  cli.option("--edge-factor", "E", "E x 2^S edges (default 8)", p.edge_factor, 1U, 64U);
  cli.option("--seed", "X", "the graph's random seed (default 1)", p.seed, std::uint64_t{0},
             ~std::uint64_t{0});
  cli.option("--batch", "B",
             "sources a bag processes between two looks at steal requests "
             "(GLB's n; default 1)",
             batch, 1U, 1'000'000U);
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    apgas_apps::report r;
    r.title = fmt::format("bc(scale {}, edge factor {})", p.scale, p.edge_factor);
    rt.run(apgas::for_each_place(build_graph{}, p));
    const bc::graph& g = bc::graph_of(p);
    apgas::glb::parameters params = apgas::glb::default_parameters();
    params.items_per_batch = batch;
    apgas::glb::outcome<std::vector<double>> out;
    r.seconds = apgas_apps::best_seconds(
        flags.repeat, [&] { out = rt.run(apgas::glb::run_with_stats(params, make_bag{}, p)); });
    double total = 0;
    double top = 0;
    std::uint32_t top_vertex = 0;
    for (std::size_t v = 0; v < out.value.size(); ++v) {
      total += out.value[v];
      if (out.value[v] > top) {
        top = out.value[v];
        top_vertex = static_cast<std::uint32_t>(v);
      }
    }
    std::vector<double> seq;
    const auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-9 * std::fabs(b); };
    apgas_apps::run_seq_and_compare(
        r, flags, total, "the sequential computation",
        [&seq, &g](std::uint32_t) {
          seq = bc::centrality_seq(g);
          double t = 0;
          for (double x : seq) t += x;
          return t;
        },
        g.n, close);
    if (!seq.empty()) {
      const double err = max_relative_error(out.value, seq);
      if (err > 1e-9 && r.failure.empty())
        r.failure = fmt::format("{}: the centralities differ from the sequential ones by up to "
                                "{:.3g} of the largest",
                                r.title, err);
      r.extra.add("max_relative_error", err);
    }
    r.result = total;
    r.verified = r.failure.empty();
    r.work = apgas_apps::work_amount{static_cast<double>(g.edges()) * g.n, "edges"};
    r.details.push_back(fmt::format("{} vertices, {} edges; the most central vertex is {} ({:.1f})",
                                    g.n, g.edges(), top_vertex, top));
    if (r.seq_seconds) {
      const double cores = static_cast<double>(rt.places()) * rt.threads();
      r.details.push_back(fmt::format("parallel efficiency {:.1f}% on {} core(s)",
                                      100.0 * *r.seq_seconds / r.seconds / cores, cores));
    }
    const std::string table = out.stats.table();
    for (std::size_t at = 0; at < table.size();) {
      const std::size_t end = table.find('\n', at);
      r.details.push_back(table.substr(at, end - at));
      at = end == std::string::npos ? table.size() : end + 1;
    }
    r.extra.add("scale", p.scale).add("edges", g.edges()).add("imbalance", out.stats.imbalance());
    r.extra.add("top_vertex", top_vertex);
    return r;
  });
}
