// Betweenness centrality (SSCA2 kernel 4 style) as a GLB bag: an R-MAT graph of 2^scale
// vertices, replicated at every place (each builds it from the same seed), and Brandes'
// algorithm (Brandes, J. Math. Sociol. 2001) with one source vertex per item of the bag.
//
// The graph is directed and unweighted: from a source s, a breadth-first search counts the
// shortest paths to every vertex (sigma), then the vertices are taken in the reverse order of
// their distance and each adds its share of the dependencies of its successors on the shortest
// paths: delta[v] += sigma[v] / sigma[w] * (1 + delta[w]). A vertex's betweenness is the sum of
// its dependencies over every source. No predecessor lists: the successors of v on shortest
// paths are its out-neighbours one step further away.
#pragma once

#include <apgas/serialization.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

namespace bc {

/// @brief What makes an R-MAT graph (the same at every place).
struct graph_params {
  std::uint32_t scale = 12;      ///< 2^scale vertices
  std::uint32_t edge_factor = 8; ///< edge_factor * 2^scale edges (SSCA2: 8)
  std::uint64_t seed = 1;
  double a = 0.55, b = 0.1, c = 0.1; ///< R-MAT quadrant probabilities (d = 1 - a - b - c)
  friend bool operator<(const graph_params& x, const graph_params& y) {
    return std::tie(x.scale, x.edge_factor, x.seed, x.a, x.b, x.c) <
           std::tie(y.scale, y.edge_factor, y.seed, y.a, y.b, y.c);
  }
};

/// @brief A directed graph in compressed sparse row form: the out-neighbours of v are
/// targets[offsets[v] .. offsets[v + 1]).
struct graph {
  std::uint32_t n = 0;
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint32_t> targets;
  std::uint64_t edges() const noexcept { return targets.size(); }
};

/// @brief The R-MAT graph of `p`: each edge picks one quadrant of the adjacency matrix per
/// level (probabilities a, b, c, d), and the vertex ids are permuted at random, so that the
/// high-degree vertices are not all at small ids. Self-loops are dropped.
graph make_rmat(const graph_params& p);

/// @brief The graph of `p` in this process, built on first use (every place keeps its copy;
/// later calls return it at once). Thread-safe.
const graph& graph_of(const graph_params& p);

/// @brief Adds the dependencies of every vertex on source `s` to `centrality` (resized to the
/// vertex count if needed), with this thread's scratch arrays. @return edges examined.
std::uint64_t brandes_from(const graph& g, std::uint32_t s, std::vector<double>& centrality);

/// @brief The bag: ranges of source vertices still to be processed.
struct bag {
  using result_type = std::vector<double>; ///< betweenness by vertex, from these sources

  graph_params params;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges; ///< [first, last) each

  std::size_t process(std::size_t n, std::vector<double>& centrality) {
    const graph& g = graph_of(params);
    std::size_t done = 0;
    while (done < n && !ranges.empty()) {
      const std::uint32_t s = --ranges.back().second;
      if (ranges.back().first == ranges.back().second) ranges.pop_back();
      brandes_from(g, s, centrality);
      ++done;
    }
    return done;
  }
  bag split() {
    bag loot{params, {}};
    for (auto& r : ranges) {
      const std::uint32_t half = (r.second - r.first) / 2;
      if (half == 0) continue;
      loot.ranges.emplace_back(r.second - half, r.second);
      r.second -= half;
    }
    return loot;
  }
  void merge(bag&& other) {
    ranges.insert(ranges.end(), other.ranges.begin(), other.ranges.end());
    other.ranges.clear();
  }
  bool empty() const noexcept { return ranges.empty(); }
  std::size_t size() const noexcept {
    std::size_t k = 0;
    for (const auto& r : ranges) k += r.second - r.first;
    return k;
  }
  static void reduce(std::vector<double>& into, const std::vector<double>& from) {
    if (into.size() < from.size()) into.resize(from.size());
    for (std::size_t i = 0; i < from.size(); ++i) into[i] += from[i];
  }
  template <class A>
  void serialize(A& ar) {
    ar& params& ranges;
  }
};

/// @brief Betweenness of every vertex from every source, by one thread.
std::vector<double> centrality_seq(const graph& g);

} // namespace bc
