/// @file Undirected graphs in compressed sparse row form, and the generators of the Tascell
/// spanning-tree paper (Random, 2D-torus, Hypercube, Bintree), with each vertex's edge order
/// shuffled by a seeded generator so that no traversal order is favoured by accident.
///
/// Every undirected edge {u, v} is stored twice, as u -> v and v -> u. edge_count() counts
/// those directed edges (the paper's "E": 2D-torus(4000) has 64,000,000).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <utility>

namespace apgas_apps {

using vertex_id = std::uint32_t;

/// @brief A heap array whose elements are left uninitialised by its maker
/// (make_unique_for_overwrite): the generators write every element, and zeroing 256 MB first
/// would cost as much as filling it.
template <class T>
using raw_array = std::unique_ptr<T[]>; // NOLINT(modernize-avoid-c-arrays): see above

/// @brief The largest vertex count: vertex_id's maximum is kept free as a "no vertex" value.
inline constexpr std::uint64_t k_max_vertices = std::numeric_limits<vertex_id>::max();

/// @brief An immutable undirected graph: the neighbours of v are
/// targets[offsets[v] .. offsets[v + 1]). Built once, then only read (by any thread).
class csr_graph {
public:
  csr_graph() = default;
  /// @brief Takes the arrays; offsets has n + 1 entries, targets offsets[n].
  csr_graph(std::uint32_t n, raw_array<std::uint64_t> offsets, raw_array<vertex_id> targets)
      : m_vertex_count(n), m_offsets(std::move(offsets)), m_targets(std::move(targets)) {}

  [[nodiscard]] std::uint32_t vertex_count() const noexcept { return m_vertex_count; }
  /// @brief Directed edges stored (twice the undirected edges).
  [[nodiscard]] std::uint64_t edge_count() const noexcept {
    return m_offsets ? m_offsets[m_vertex_count] : 0;
  }
  [[nodiscard]] std::uint64_t degree(vertex_id v) const noexcept {
    return m_offsets[v + 1] - m_offsets[v];
  }
  [[nodiscard]] std::span<const vertex_id> neighbours(vertex_id v) const noexcept {
    return {m_targets.get() + m_offsets[v], m_targets.get() + m_offsets[v + 1]};
  }
  /// @brief Bytes held by the two arrays.
  [[nodiscard]] std::uint64_t memory_bytes() const noexcept {
    return (std::uint64_t{m_vertex_count} + 1) * sizeof(std::uint64_t) +
           edge_count() * sizeof(vertex_id);
  }

private:
  std::uint32_t m_vertex_count = 0;
  raw_array<std::uint64_t> m_offsets;
  raw_array<vertex_id> m_targets;
};

/// @brief splitmix64: tiny, fast, and good enough to pick neighbours and shuffle edge lists.
/// Deterministic for a given seed, so a graph is reproducible from (kind, size, seed).
class graph_rng {
public:
  explicit graph_rng(std::uint64_t seed) noexcept : m_state(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// @brief Uniform-ish in [0, bound), bound > 0 (multiply-shift; the bias, below 2^-32 per
  /// value for these bounds, does not matter for graph generation).
  std::uint32_t below(std::uint64_t bound) noexcept {
    return static_cast<std::uint32_t>(((next() >> 32) * bound) >> 32);
  }

private:
  std::uint64_t m_state;
};

namespace graph_detail {

template <class T>
raw_array<T> uninitialized_array(std::uint64_t n) {
  return std::make_unique_for_overwrite<T[]>( // NOLINT(modernize-avoid-c-arrays): raw_array
      static_cast<std::size_t>(n));
}

/// Fisher-Yates shuffle of every adjacency list, one generator stream for the whole graph.
inline void shuffle_edges(std::uint32_t n, const std::uint64_t* offsets, vertex_id* targets,
                          std::uint64_t seed) {
  graph_rng rng(seed ^ 0x5DEECE66DULL);
  for (std::uint32_t v = 0; v < n; ++v) {
    vertex_id* first = targets + offsets[v];
    const std::uint64_t d = offsets[v + 1] - offsets[v];
    for (std::uint64_t i = d; i > 1; --i) {
      const std::uint32_t j = rng.below(i);
      const vertex_id tmp = first[i - 1];
      first[i - 1] = first[j];
      first[j] = tmp;
    }
  }
}

/// A graph in which every vertex has the same degree: `fill(v, out)` writes v's neighbours.
template <class Fill>
csr_graph regular_graph(std::uint64_t n, std::uint64_t degree, std::uint64_t seed, Fill fill) {
  auto offsets = uninitialized_array<std::uint64_t>(n + 1);
  auto targets = uninitialized_array<vertex_id>(n * degree);
  for (std::uint64_t v = 0; v <= n; ++v) offsets[v] = v * degree;
  for (std::uint64_t v = 0; v < n; ++v) fill(static_cast<vertex_id>(v), targets.get() + v * degree);
  shuffle_edges(static_cast<std::uint32_t>(n), offsets.get(), targets.get(), seed);
  return {static_cast<std::uint32_t>(n), std::move(offsets), std::move(targets)};
}

} // namespace graph_detail

/// @brief 2D-torus(side): side x side vertices, each linked to its 4 neighbours with
/// wrap-around (degree 4; for side 1 and 2 some of those are self-loops or repeated edges).
/// @throws std::invalid_argument unless 1 <= side and side^2 < 2^32 - 1.
inline csr_graph make_torus(std::uint32_t side, std::uint64_t seed) {
  const std::uint64_t s = side;
  if (s == 0 || s * s >= k_max_vertices)
    throw std::invalid_argument("torus: side must be from 1 to 65535");
  return graph_detail::regular_graph(s * s, 4, seed, [s](vertex_id v, vertex_id* out) {
    const std::uint64_t r = v / s;
    const std::uint64_t c = v % s;
    out[0] = static_cast<vertex_id>(((r + 1) % s) * s + c);
    out[1] = static_cast<vertex_id>(((r + s - 1) % s) * s + c);
    out[2] = static_cast<vertex_id>(r * s + (c + 1) % s);
    out[3] = static_cast<vertex_id>(r * s + (c + s - 1) % s);
  });
}

/// @brief Hypercube(dim): 2^dim vertices, v linked to v ^ (1 << k) for each k (degree dim).
/// @throws std::invalid_argument unless dim <= 31.
inline csr_graph make_hypercube(std::uint32_t dim, std::uint64_t seed) {
  if (dim > 31) throw std::invalid_argument("hypercube: dimension must be from 0 to 31");
  return graph_detail::regular_graph(std::uint64_t{1} << dim, dim, seed,
                                     [dim](vertex_id v, vertex_id* out) {
                                       for (std::uint32_t k = 0; k < dim; ++k)
                                         out[k] = v ^ (vertex_id{1} << k);
                                     });
}

/// @brief Bintree(levels): a complete binary tree of 2^levels - 1 vertices; the children of v
/// are 2v + 1 and 2v + 2. Its spanning tree is the graph itself.
/// @throws std::invalid_argument unless 1 <= levels <= 31.
inline csr_graph make_bintree(std::uint32_t levels, std::uint64_t seed) {
  if (levels < 1 || levels > 31)
    throw std::invalid_argument("bintree: levels must be from 1 to 31");
  const std::uint64_t n = (std::uint64_t{1} << levels) - 1;
  auto offsets = graph_detail::uninitialized_array<std::uint64_t>(n + 1);
  auto targets = graph_detail::uninitialized_array<vertex_id>(n == 1 ? 0 : 2 * (n - 1));
  const std::uint64_t first_leaf = n / 2;
  std::uint64_t e = 0;
  for (std::uint64_t v = 0; v < n; ++v) {
    offsets[v] = e;
    if (v != 0) targets[e++] = static_cast<vertex_id>((v - 1) / 2);
    if (v < first_leaf) {
      targets[e++] = static_cast<vertex_id>(2 * v + 1);
      targets[e++] = static_cast<vertex_id>(2 * v + 2);
    }
  }
  offsets[n] = e;
  graph_detail::shuffle_edges(static_cast<std::uint32_t>(n), offsets.get(), targets.get(), seed);
  return {static_cast<std::uint32_t>(n), std::move(offsets), std::move(targets)};
}

/// @brief Random(n, picks): each vertex picks `picks` neighbours and every pick becomes an
/// undirected edge, so there are 2 * picks * n directed edges (average degree 2 * picks).
///
/// Connectivity: the paper's picks are all uniform, which leaves a graph that is connected
/// only with high probability. Here the first pick of vertex i > 0 is uniform over the
/// earlier vertices [0, i) and the others uniform over all vertices; the first picks alone
/// form a random recursive tree, so the graph is always connected, with the same edge count.
/// Self-loops are re-drawn; repeated edges are kept (they are rare and harmless).
/// @throws std::invalid_argument unless 1 <= n < 2^32 - 1 and 1 <= picks <= 1024.
inline csr_graph make_random(std::uint64_t n, std::uint32_t picks, std::uint64_t seed) {
  if (n == 0 || n >= k_max_vertices)
    throw std::invalid_argument("random: vertex count must be from 1 to 4294967294");
  if (picks == 0 || picks > 1024)
    throw std::invalid_argument("random: picks must be from 1 to 1024");
  const std::uint64_t p = n == 1 ? 0 : picks; // a lone vertex has nobody to pick
  // Two passes over the same generator stream, one to count degrees and one to fill, rather
  // than storing the n * picks pairs in between.
  auto for_each_pick = [&](auto&& on_edge) {
    graph_rng rng(seed);
    for (std::uint64_t i = 0; i < n; ++i) {
      for (std::uint64_t k = 0; k < p; ++k) {
        std::uint64_t j;
        if (k == 0 && i > 0) {
          j = rng.below(i);
        } else {
          do j = rng.below(n);
          while (j == i);
        }
        on_edge(static_cast<vertex_id>(i), static_cast<vertex_id>(j));
      }
    }
  };
  auto offsets = graph_detail::uninitialized_array<std::uint64_t>(n + 1);
  for (std::uint64_t v = 0; v <= n; ++v) offsets[v] = 0;
  for_each_pick([&](vertex_id u, vertex_id v) {
    ++offsets[u + 1];
    ++offsets[std::uint64_t{v} + 1];
  });
  for (std::uint64_t v = 0; v < n; ++v) offsets[v + 1] += offsets[v];
  auto targets = graph_detail::uninitialized_array<vertex_id>(offsets[n]);
  // Fill cursors: offsets[v] advances while v's list is written, then is restored below.
  for_each_pick([&](vertex_id u, vertex_id v) {
    targets[offsets[u]++] = v;
    targets[offsets[v]++] = u;
  });
  // Each offsets[v] now equals the original offsets[v + 1]: shift back by one.
  for (std::uint64_t v = n; v > 0; --v) offsets[v] = offsets[v - 1];
  offsets[0] = 0;
  graph_detail::shuffle_edges(static_cast<std::uint32_t>(n), offsets.get(), targets.get(), seed);
  return {static_cast<std::uint32_t>(n), std::move(offsets), std::move(targets)};
}

} // namespace apgas_apps
