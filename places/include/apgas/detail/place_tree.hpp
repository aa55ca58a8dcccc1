// A spanning tree of the places rooted at any place, of bounded arity: what lets a protocol
// reach every place, or hear from every place, with O(arity) messages at each place and
// O(log P) hops, instead of O(P) messages at one place. Up to `arity` + 1 places it is flat
// (the root is every other place's parent), so small runs keep their direct messages.
//
// Places are ranked relative to the root, r = (p - root) mod P; rank r's children are ranks
// arity * r + 1 .. arity * r + arity, its parent rank (r - 1) / arity. A subtree is then a
// union of rank intervals, one per level, which is how targets are split among children.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace apgas::detail {

using place_id = std::uint32_t;

/// @brief The tree of `places` places rooted at `root`. Thread-safety: immutable.
class place_tree {
public:
  place_tree(place_id root, place_id places, place_id arity) noexcept
      : m_root(root), m_places(places), m_arity(std::max<place_id>(arity, 1)) {}

  place_id root() const noexcept { return m_root; }
  /// @brief True if every place is a child of the root.
  bool flat() const noexcept { return m_places <= m_arity + 1; }
  /// @brief The parent of `p` (pre: p is not the root).
  place_id parent(place_id p) const noexcept { return place_of((rank_of(p) - 1) / m_arity); }
  /// @brief The children of `p`, in rank order.
  template <class F>
  void for_each_child(place_id p, F&& f) const {
    const std::uint64_t first = std::uint64_t{rank_of(p)} * m_arity + 1;
    for (std::uint64_t r = first; r < first + m_arity && r < m_places; ++r)
      f(place_of(static_cast<place_id>(r)));
  }
  /// @brief The child of `p` whose subtree holds `target` (pre: target is in p's subtree and
  /// is not p).
  place_id child_toward(place_id p, place_id target) const noexcept {
    const place_id top = rank_of(p);
    std::uint64_t r = rank_of(target);
    while ((r - 1) / m_arity != top) r = (r - 1) / m_arity;
    return place_of(static_cast<place_id>(r));
  }
  /// @brief True if `target` is in the subtree of `p` (p included).
  bool in_subtree(place_id p, place_id target) const noexcept {
    const place_id top = rank_of(p);
    for (std::uint64_t r = rank_of(target);; r = (r - 1) / m_arity) {
      if (r == top) return true;
      if (r < top || r == 0) return false;
    }
  }
  /// @brief Splits `targets` (in the subtree of `p`, p excluded) by the child of `p` whose
  /// subtree holds them: f(child, that child's targets) once per child with any.
  template <class F>
  void split_by_child(place_id p, const std::vector<place_id>& targets, F&& f) const {
    std::vector<std::pair<place_id, place_id>> by_child; // (child, target)
    by_child.reserve(targets.size());
    for (place_id t : targets) by_child.emplace_back(child_toward(p, t), t);
    std::sort(by_child.begin(), by_child.end());
    std::vector<place_id> group;
    for (std::size_t i = 0; i < by_child.size();) {
      const place_id child = by_child[i].first;
      group.clear();
      for (; i < by_child.size() && by_child[i].first == child; ++i)
        group.push_back(by_child[i].second);
      f(child, group);
    }
  }
  /// @brief Hops from the root to the deepest place.
  unsigned depth() const noexcept {
    unsigned d = 0;
    for (std::uint64_t last = m_places - 1; last > 0; last = (last - 1) / m_arity) ++d;
    return d;
  }

private:
  place_id rank_of(place_id p) const noexcept {
    return static_cast<place_id>((std::uint64_t{p} + m_places - m_root) % m_places);
  }
  place_id place_of(place_id rank) const noexcept {
    return static_cast<place_id>((std::uint64_t{rank} + m_root) % m_places);
  }
  place_id m_root;
  place_id m_places;
  place_id m_arity;
};

} // namespace apgas::detail
