/// @file Barnes-Hut (the irregular tree code of the Friendly Barriers suite): the forces on N
/// bodies in the plane from a quadtree of their masses, each body walking the tree and opening
/// a cell only when it is too close (size / distance >= theta). The tree is built once,
/// sequentially; the forces are a parallel loop over blocks of bodies, whose walks differ in
/// length with the bodies' surroundings (a clustered distribution). Every version walks the
/// same tree in the same order per body, so all give the same forces to the bit.
#pragma once

#include "apgas_apps/split_range.hpp"

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>
#include <vector>

namespace apgas_apps {

struct bh_body {
  double x = 0, y = 0, mass = 0;
};

/// @brief A quadtree: cells with their mass and centre of mass, leaves holding one body.
struct bh_tree {
  struct cell {
    double cx = 0, cy = 0, half = 0; ///< the square: centre and half side
    double mass = 0, mx = 0, my = 0; ///< total mass, centre of mass
    std::array<std::int32_t, 4> child{-1, -1, -1, -1};
    std::int32_t body = -1; ///< a leaf's body (-1: an inner cell or empty)
  };
  std::vector<cell> cells;
};

/// @brief n bodies in clusters (Plummer-like: dense cores, sparse halos), from `seed`.
inline std::vector<bh_body> bh_bodies(std::size_t n, std::uint64_t seed = 2024) {
  std::vector<bh_body> v(n);
  std::uint64_t x = seed;
  const auto uniform = [&x] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(x >> 11) + 0.5) * 0x1.0p-53;
  };
  for (std::size_t i = 0; i < n; ++i) {
    const double cluster = std::floor(uniform() * 4); // four clusters
    const double r = 0.05 / std::sqrt(std::pow(uniform(), -2.0 / 3.0) - 0.99);
    const double angle = 2 * std::numbers::pi * uniform();
    v[i].x = 0.25 + 0.5 * std::fmod(cluster, 2.0) + std::min(r, 0.2) * std::cos(angle);
    v[i].y = 0.25 + 0.5 * std::floor(cluster / 2) + std::min(r, 0.2) * std::sin(angle);
    v[i].mass = 1.0 / static_cast<double>(n);
  }
  return v;
}

/// @brief Builds the tree over the unit square (bodies outside are clamped in).
inline bh_tree bh_build(const std::vector<bh_body>& bodies) {
  bh_tree t;
  t.cells.reserve(bodies.size() * 2 + 1);
  t.cells.push_back(bh_tree::cell{0.5, 0.5, 0.5});
  for (std::size_t i = 0; i < bodies.size(); ++i) {
    std::int32_t c = 0;
    std::int32_t placing = static_cast<std::int32_t>(i);
    for (int depth = 0;; ++depth) {
      bh_tree::cell& here = t.cells[static_cast<std::size_t>(c)];
      const bool empty_leaf =
          here.body < 0 && here.child == std::array<std::int32_t, 4>{-1, -1, -1, -1};
      if (empty_leaf || depth > 48) { // a leaf (past depth 48: bodies at the same point share)
        if (here.body < 0) here.body = placing;
        break;
      }
      if (here.body >= 0) { // a full leaf: push its body one level down first
        const std::int32_t old = here.body;
        here.body = -1;
        const bh_body& b = bodies[static_cast<std::size_t>(old)];
        const int q = (b.x >= here.cx ? 1 : 0) + (b.y >= here.cy ? 2 : 0);
        const double h = here.half / 2;
        bh_tree::cell child{here.cx + (q & 1 ? h : -h), here.cy + (q & 2 ? h : -h), h};
        child.body = old;
        t.cells.push_back(child);
        t.cells[static_cast<std::size_t>(c)].child[static_cast<std::size_t>(q)] =
            static_cast<std::int32_t>(t.cells.size() - 1);
      }
      bh_tree::cell& now = t.cells[static_cast<std::size_t>(c)];
      const bh_body& b = bodies[static_cast<std::size_t>(placing)];
      const int q = (b.x >= now.cx ? 1 : 0) + (b.y >= now.cy ? 2 : 0);
      if (now.child[static_cast<std::size_t>(q)] < 0) {
        const double h = now.half / 2;
        t.cells.push_back(bh_tree::cell{now.cx + (q & 1 ? h : -h), now.cy + (q & 2 ? h : -h), h});
        t.cells[static_cast<std::size_t>(c)].child[static_cast<std::size_t>(q)] =
            static_cast<std::int32_t>(t.cells.size() - 1);
      }
      c = t.cells[static_cast<std::size_t>(c)].child[static_cast<std::size_t>(q)];
    }
  }
  // Masses and centres of mass, children before parents (children come later in the array).
  for (std::size_t k = t.cells.size(); k-- > 0;) {
    bh_tree::cell& c = t.cells[k];
    if (c.body >= 0) {
      const bh_body& b = bodies[static_cast<std::size_t>(c.body)];
      c.mass = b.mass;
      c.mx = b.x;
      c.my = b.y;
      continue;
    }
    double m = 0, mx = 0, my = 0;
    for (const std::int32_t ch : c.child) {
      if (ch < 0) continue;
      const bh_tree::cell& d = t.cells[static_cast<std::size_t>(ch)];
      m += d.mass;
      mx += d.mass * d.mx;
      my += d.mass * d.my;
    }
    c.mass = m;
    c.mx = m > 0 ? mx / m : c.cx;
    c.my = m > 0 ? my / m : c.cy;
  }
  return t;
}

/// @brief The acceleration on body i (a softened 1/r^2 law), by a walk of the tree.
inline std::array<double, 2> bh_force(const bh_tree& t, const std::vector<bh_body>& bodies,
                                      std::size_t i, double theta) {
  constexpr double k_soft = 1e-6;
  const bh_body& me = bodies[i];
  double ax = 0, ay = 0;
  std::int32_t stack[256];
  int top = 0;
  stack[top++] = 0;
  while (top > 0) {
    const bh_tree::cell& c = t.cells[static_cast<std::size_t>(stack[--top])];
    if (c.mass == 0 || c.body == static_cast<std::int32_t>(i)) continue;
    const double dx = c.mx - me.x;
    const double dy = c.my - me.y;
    const double d2 = dx * dx + dy * dy + k_soft;
    const bool far = 4 * c.half * c.half < theta * theta * d2;
    if (c.body >= 0 || far) {
      const double inv = c.mass / (d2 * std::sqrt(d2));
      ax += dx * inv;
      ay += dy * inv;
      continue;
    }
    for (const std::int32_t ch : c.child)
      if (ch >= 0 && top < 256) stack[top++] = ch;
  }
  return {ax, ay};
}

/// @brief Forces on bodies [lo, hi) into `out` (2 per body).
[[gnu::noinline]] inline void bh_forces(const bh_tree& t, const std::vector<bh_body>& bodies,
                                        double theta, double* out, std::size_t lo, std::size_t hi) {
  for (std::size_t i = lo; i < hi; ++i) {
    const auto a = bh_force(t, bodies, i, theta);
    out[2 * i] = a[0];
    out[2 * i + 1] = a[1];
  }
}

/// @brief Every force, with any fork.
template <class Fork>
void barnes_hut(const bh_tree& t, const std::vector<bh_body>& bodies, double theta, double* out,
                std::size_t grain, const Fork& fork) {
  split_range(0, bodies.size(), grain, fork,
              [&](std::size_t lo, std::size_t hi) { bh_forces(t, bodies, theta, out, lo, hi); });
}

/// @brief apgas.
inline apgas::task<> barnes_hut(const bh_tree& t, const std::vector<bh_body>& bodies, double theta,
                                double* out, std::size_t grain) {
  const auto leaf = [&](std::size_t lo, std::size_t hi) {
    bh_forces(t, bodies, theta, out, lo, hi);
  };
  co_await split_range(0, bodies.size(), grain, leaf);
}

} // namespace apgas_apps
