// The shape of GLB's lifeline protocol, as pure functions of a place and the number of places:
// the lifeline graph, the start tree and the random victims. Shared by the library and by the
// simulation of the protocol at many places (bench/glb/lifeline_sim.cpp), so that what the
// simulation measures is the graph the library uses.
//
// Lifeline graph (after X10's GLB): write place ids in base l with z digits, l^z >= places.
// A place's lifeline in dimension j is the nearest place before it on the cycle of digit j (the
// digit decremented modulo l, the other digits kept), skipping ids that are not places. Each
// dimension is a cycle among the places that share the other digits, so a place has at most z
// lifelines and is the lifeline of at most z places, and the graph is strongly connected (from
// place 0 set the digits of any target from the highest down: every id on the way is at most
// the target; back to 0 clear them from the lowest up). Work flows against the edges: a place
// that registered on its lifeline is fed by it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace apgas::detail::glb {

using place_id = std::uint32_t;

/// @brief The smallest z >= 1 with base^z >= places (the lifelines per place). pre: base >= 2.
inline unsigned lifeline_dimensions(place_id places, unsigned base) noexcept {
  unsigned z = 1;
  for (std::uint64_t reach = base; reach < places; reach *= base) ++z;
  return z;
}

/// @brief The lifelines of place `h`: at most one per dimension, never `h` itself, in
/// dimension order. pre: h < places, base >= 2.
inline std::vector<place_id> lifelines_of(place_id h, place_id places, unsigned base,
                                          unsigned dimensions) {
  std::vector<place_id> out;
  std::uint64_t unit = 1; // base^j: the weight of digit j
  // Dimensions whose digit is zero in every place id add nothing (and would overflow).
  for (unsigned j = 0; j < dimensions && unit < places; ++j) {
    const std::uint64_t span = unit * base; // the digits up to j
    std::uint64_t v = h;
    for (unsigned k = 1; k < base; ++k) {
      // Digit j minus one, modulo base; the digits above and below it unchanged.
      v = v - v % span + (v % span + span - unit) % span;
      if (v < places) {
        out.push_back(static_cast<place_id>(v));
        break;
      }
    }
    unit = span;
  }
  return out;
}

/// @brief The places `h` feeds at the start (the tree wave): 3h+1 .. 3h+3 that exist.
inline std::vector<place_id> tree_children_of(place_id h, place_id places) {
  std::vector<place_id> out;
  for (std::uint64_t c = 3ULL * h + 1; c <= 3ULL * h + 3 && c < places; ++c)
    out.push_back(static_cast<place_id>(c));
  return out;
}

/// @brief The place that feeds `h` at the start, for h > 0.
inline place_id tree_parent_of(place_id h) noexcept { return (h - 1) / 3; }

/// @brief A small, fast random generator (splitmix64): victims and simulated delays.
class random_source {
public:
  explicit random_source(std::uint64_t seed) noexcept : m_state(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// In [0, n), uniform but for a bias of n / 2^64. pre: n > 0.
  std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }

private:
  std::uint64_t m_state;
};

/// @brief The random victims of place `h`: when the other places are at most `count`, every
/// one of them once (a steal then picks any other place); else `count` of them drawn with
/// replacement, fixed for the run (X10's m pre-drawn victims: memory O(count), not O(places)).
/// pre: places >= 2.
inline std::vector<place_id> victims_of(place_id h, place_id places, unsigned count,
                                        random_source& rng) {
  std::vector<place_id> out;
  if (places - 1 <= count) {
    for (place_id p = 0; p < places; ++p)
      if (p != h) out.push_back(p);
    return out;
  }
  out.reserve(count);
  while (out.size() < count) {
    const auto p = static_cast<place_id>(rng.below(places - 1));
    out.push_back(p >= h ? p + 1 : p); // any place but h
  }
  return out;
}

} // namespace apgas::detail::glb
