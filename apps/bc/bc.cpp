// R-MAT graphs and Brandes' algorithm (see bc.hpp).
#include "bc.hpp"

#include <apgas/detail/glb_graph.hpp>

#include <numeric>

namespace bc {

graph make_rmat(const graph_params& p) {
  graph g;
  g.n = std::uint32_t{1} << p.scale;
  const std::uint64_t m = std::uint64_t{p.edge_factor} << p.scale;
  apgas::detail::glb::random_source rng(p.seed);
  const auto uniform = [&rng] { return static_cast<double>(rng.next() >> 11) * 0x1.0p-53; };
  std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;
  edges.reserve(m);
  for (std::uint64_t e = 0; e < m; ++e) {
    std::uint32_t u = 0;
    std::uint32_t v = 0;
    for (std::uint32_t level = 0; level < p.scale; ++level) {
      const double x = uniform();
      const std::uint32_t bit = std::uint32_t{1} << (p.scale - 1 - level);
      if (x < p.a) {
      } else if (x < p.a + p.b) {
        v |= bit;
      } else if (x < p.a + p.b + p.c) {
        u |= bit;
      } else {
        u |= bit;
        v |= bit;
      }
    }
    if (u != v) edges.emplace_back(u, v);
  }
  // A random permutation of the ids (Fisher-Yates).
  std::vector<std::uint32_t> perm(g.n);
  std::iota(perm.begin(), perm.end(), 0U);
  for (std::uint32_t i = g.n; i > 1; --i)
    std::swap(perm[i - 1], perm[static_cast<std::size_t>(rng.below(i))]);
  g.offsets.assign(std::size_t{g.n} + 1, 0);
  for (auto& [u, v] : edges) {
    u = perm[u];
    v = perm[v];
    ++g.offsets[u + 1];
  }
  for (std::uint32_t i = 0; i < g.n; ++i) g.offsets[i + 1] += g.offsets[i];
  g.targets.resize(edges.size());
  std::vector<std::uint64_t> fill(g.offsets.begin(), g.offsets.end() - 1);
  for (const auto& [u, v] : edges) g.targets[fill[u]++] = v;
  return g;
}

const graph& graph_of(const graph_params& p) {
  static std::mutex lock;
  static std::map<graph_params, std::unique_ptr<graph>> graphs;
  std::lock_guard guard(lock);
  std::unique_ptr<graph>& g = graphs[p];
  if (g == nullptr) g = std::make_unique<graph>(make_rmat(p));
  return *g; // never freed nor moved: a map node
}

namespace {

/// One thread's arrays for a source (kept between sources: no allocation per item).
struct scratch {
  std::vector<std::int32_t> dist;
  std::vector<double> sigma;
  std::vector<double> delta;
  std::vector<std::uint32_t> order; ///< vertices in the order the search reached them
  void fit(std::uint32_t n) {
    if (dist.size() == n) return;
    dist.assign(n, -1);
    sigma.assign(n, 0.0);
    delta.assign(n, 0.0);
    order.reserve(n);
  }
};

} // namespace

std::uint64_t brandes_from(const graph& g, std::uint32_t s, std::vector<double>& centrality) {
  thread_local scratch t;
  t.fit(g.n);
  if (centrality.size() < g.n) centrality.resize(g.n);
  std::uint64_t examined = 0;
  t.order.clear();
  t.order.push_back(s);
  t.dist[s] = 0;
  t.sigma[s] = 1.0;
  for (std::size_t head = 0; head < t.order.size(); ++head) {
    const std::uint32_t v = t.order[head];
    const std::int32_t next = t.dist[v] + 1;
    for (std::uint64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
      const std::uint32_t w = g.targets[e];
      if (t.dist[w] < 0) {
        t.dist[w] = next;
        t.order.push_back(w);
      }
      if (t.dist[w] == next) t.sigma[w] += t.sigma[v];
    }
    examined += g.offsets[v + 1] - g.offsets[v];
  }
  for (std::size_t i = t.order.size(); i-- > 0;) {
    const std::uint32_t v = t.order[i];
    const std::int32_t next = t.dist[v] + 1;
    double d = 0.0;
    for (std::uint64_t e = g.offsets[v]; e < g.offsets[v + 1]; ++e) {
      const std::uint32_t w = g.targets[e];
      if (t.dist[w] == next) d += t.sigma[v] / t.sigma[w] * (1.0 + t.delta[w]);
    }
    t.delta[v] = d;
    if (v != s) centrality[v] += d;
  }
  for (const std::uint32_t v : t.order) { // reset only what this source touched
    t.dist[v] = -1;
    t.sigma[v] = 0.0;
    t.delta[v] = 0.0;
  }
  return examined;
}

std::vector<double> centrality_seq(const graph& g) {
  std::vector<double> c(g.n, 0.0);
  for (std::uint32_t s = 0; s < g.n; ++s) brandes_from(g, s, c);
  return c;
}

} // namespace bc
