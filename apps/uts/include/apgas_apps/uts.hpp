// UTS, the Unbalanced Tree Search benchmark (Olivier et al., LCPC 2006), as a GLB bag.
//
// A tree is implicit: a node's state is a SHA-1 digest (its parent's state and its child index,
// see uts_sha1.hpp), and its number of children is a function of its state and depth:
//  - geometric (-t 1): a geometric distribution of mean b_i, where b_i is b0 shaped by depth
//    (-a: 0 linear decrease to depth d, 1 exponential decrease, 2 cyclic, 3 fixed up to depth d);
//  - binomial (-t 0): the root has b0 children, every other node m children with probability q;
//  - hybrid (-t 2): geometric above depth f*d, binomial below; balanced (-t 3): b0 children
//    down to depth d.
// At most 100 children per node, except a binomial root (as the reference does). Node
// generation follows the reference implementation exactly, floating point included, so the
// published sizes come out: T1 (-t 1 -a 3 -d 10 -b 4 -r 19) 4,130,071 nodes, T3 (-t 0 -b 2000
// -q 0.124875 -m 8 -r 42) 4,112,897, T1L (-t 1 -a 3 -d 13 -b 4 -r 29) 102,181,082.
//
// The bag (after X10's GLB UTS) is a stack of intervals: the children [lower, upper) of a node
// that are still to be visited, with that node's state and depth. Processing an item visits one
// child: hashes its state, counts it, and pushes its own children. Children are hashed several
// at a time (up to 16 pending ones with AVX-512, pairs with the SHA instructions): the order of
// the visits changes, the tree does not. Splitting gives away the upper half of every interval
// with two children or more.
#pragma once

#include <apgas/serialization.hpp>

#include "apgas_apps/uts_sha1.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace apgas_apps::uts {

enum class tree_type : std::int32_t { binomial = 0, geometric = 1, hybrid = 2, balanced = 3 };
enum class geo_shape : std::int32_t { linear = 0, expdec = 1, cyclic = 2, fixed = 3 };

/// @brief At most this many children per node (a binomial root excepted).
inline constexpr int k_max_children = 100;

/// @brief A tree's parameters (the reference's flags and defaults).
struct tree_params {
  tree_type type = tree_type::geometric; ///< -t
  double b0 = 4.0;                       ///< -b: root branching factor (geometric: mean)
  std::int32_t seed = 0;                 ///< -r: root seed
  std::int32_t nonleaf_bf = 4;           ///< -m: children of a binomial non-leaf
  double nonleaf_prob = 15.0 / 64.0;     ///< -q: probability of a binomial non-leaf
  std::int32_t gen_mx = 6;               ///< -d: depth the geometric shape refers to
  geo_shape shape = geo_shape::linear;   ///< -a
  double shift_depth = 0.5;              ///< -f: hybrid: geometric above shift_depth * gen_mx

  /// @brief e.g. "geometric fixed b0=4 d=10 r=19", or a sample's name and that.
  std::string describe() const;
  /// @brief The published size of this tree, or 0 if it is not a published sample.
  std::uint64_t known_nodes() const noexcept;
};

/// @brief What a search counts.
struct result {
  std::uint64_t nodes = 0;
  std::uint64_t leaves = 0;
  std::uint64_t max_depth = 0;
  friend bool operator==(const result&, const result&) = default;
};

/// @brief A tree's parameters with what a node's child count needs precomputed.
class tree {
public:
  tree() : tree(tree_params{}) {}
  explicit tree(const tree_params& p);
  const tree_params& params() const noexcept { return m_p; }

  /// @brief The number of children of a node at `depth` with state `state`.
  int children(const digest& state, std::uint32_t depth) const noexcept {
    int n = 0;
    switch (m_p.type) {
    case tree_type::binomial:
      n = depth == 0 ? m_binomial_root : binomial(state);
      break;
    case tree_type::geometric:
      n = geometric(state, depth);
      break;
    case tree_type::hybrid:
      n = depth < m_p.shift_depth * m_p.gen_mx ? geometric(state, depth) : binomial(state);
      break;
    case tree_type::balanced:
      return depth < static_cast<std::uint32_t>(m_p.gen_mx) ? static_cast<int>(m_p.b0) : 0;
    }
    if (depth == 0 && m_p.type == tree_type::binomial) return n; // capped at ceil(b0) already
    return std::min(n, k_max_children);
  }

private:
  /// The reference's rng_toProb(rng_rand(state)): the last 4 bytes, 31 bits, over 2^31.
  static double probability(const digest& s) noexcept {
    const std::uint32_t b = (static_cast<std::uint32_t>(s[16]) << 24) |
                            (static_cast<std::uint32_t>(s[17]) << 16) |
                            (static_cast<std::uint32_t>(s[18]) << 8) | s[19];
    return static_cast<double>(static_cast<std::int32_t>(b & 0x7fffffffU)) / 2147483648.0;
  }
  int binomial(const digest& s) const noexcept {
    return probability(s) < m_p.nonleaf_prob ? m_p.nonleaf_bf : 0;
  }
  int geometric(const digest& s, std::uint32_t depth) const noexcept {
    const double log_q = depth < m_log_q.size() ? m_log_q[depth] : log_one_minus_p(depth);
    // The reference's floor(log(1 - u) / log(1 - p)): both logs are at most 0, so the quotient
    // is at least 0 and truncation is floor (and cheaper without SSE4.1's roundsd).
    return static_cast<int>(std::log(1.0 - probability(s)) / log_q);
  }
  /// log(1 - p) for the geometric distribution of mean b_i at `depth`, p = 1 / (1 + b_i).
  double log_one_minus_p(std::uint32_t depth) const noexcept;

  tree_params m_p;
  int m_binomial_root = 0;
  std::vector<double> m_log_q; ///< log_one_minus_p by depth, for the first depths
};

/// @brief The root's state.
template <class Hash>
digest root_state(std::int32_t seed) {
  digest d;
  Hash::root(seed, d);
  return d;
}

/// @brief A UTS bag over SHA-1 implementation Hash (see uts_sha1.hpp).
template <class Hash>
class basic_bag {
public:
  using result_type = result;
  /// @brief Children of one node hashed together, at most (Hash hashing pairs).
  static constexpr std::size_t k_batch = 4;
  /// @brief Pending children hashed together, at most (Hash hashing many, see visit_many).
  static constexpr std::size_t k_many = 16;

  /// @brief The children [lower, upper) of a node still to be visited.
  struct interval {
    digest state;        ///< the node's
    std::uint32_t depth; ///< the node's
    std::uint32_t lower;
    std::uint32_t upper;
  };

  basic_bag() = default;
  explicit basic_bag(const tree& t) : m_tree(t) {}

  /// @brief The bag of a whole tree: its root, not yet visited.
  static basic_bag whole(const tree& t) {
    basic_bag b(t);
    b.m_root = true;
    return b;
  }

  /// @brief Visits up to n nodes. @return how many.
  std::size_t process(std::size_t n, result& r) {
    std::size_t done = 0;
    if (m_root && n > 0) {
      m_root = false;
      visit(root_state<Hash>(m_tree.params().seed), 0, r);
      ++done;
    }
    if constexpr (requires { Hash::many(nullptr, nullptr, 0U, nullptr); }) {
      while (done < n && !m_stack.empty()) done += visit_many(n - done, r);
      return done;
    }
    while (done < n && !m_stack.empty()) {
      if (m_stack.back().upper - m_stack.back().lower == 1 && m_stack.size() >= 2 &&
          n - done >= 2) {
        // The top node's last child, hashed together with a child of the node below it.
        interval& top = m_stack.back();
        interval& below = m_stack[m_stack.size() - 2];
        const std::uint32_t a = --top.upper;
        const std::uint32_t b = --below.upper;
        const std::uint32_t depth_a = top.depth + 1;
        const std::uint32_t depth_b = below.depth + 1;
        digest child_a, child_b;
        two_children<Hash>(top.state, a, below.state, b, child_a, child_b);
        m_stack.pop_back(); // the top is done
        if (m_stack.back().upper == m_stack.back().lower) m_stack.pop_back();
        visit(child_b, depth_b, r);
        visit(child_a, depth_a, r);
        done += 2;
        continue;
      }
      // Up to k_batch children of the top node at once (hashed together where Hash can), an
      // even number unless it is the last: a last one pairs with the node below (above).
      interval& top = m_stack.back();
      const std::size_t left = top.upper - top.lower;
      const auto k = static_cast<unsigned>(std::min<std::size_t>(
          {k_batch, left > 2 && left < k_batch ? left & ~std::size_t{1} : left, n - done}));
      top.upper -= k;
      const std::uint32_t depth = top.depth + 1;
      digest children[k_batch];
      children_of<Hash>(top.state, top.upper, k, children);
      if (top.upper == top.lower) m_stack.pop_back(); // before visit() pushes
      for (unsigned i = k; i-- > 0;) visit(children[i], depth, r);
      done += k;
    }
    return done;
  }

  /// @brief The upper half of every interval of two children or more.
  basic_bag split() {
    basic_bag loot(m_tree);
    for (interval& i : m_stack) {
      const std::uint32_t half = (i.upper - i.lower) / 2;
      if (half == 0) continue;
      loot.m_stack.push_back({i.state, i.depth, i.upper - half, i.upper});
      i.upper -= half;
    }
    return loot;
  }

  void merge(basic_bag&& other) {
    m_root = m_root || other.m_root;
    m_stack.insert(m_stack.end(), other.m_stack.begin(), other.m_stack.end());
    other.m_stack.clear();
    other.m_root = false;
  }

  bool empty() const noexcept { return m_stack.empty() && !m_root; }

  /// @brief Nodes still to be visited at the top of the bag (not their descendants).
  std::uint64_t size() const noexcept {
    std::uint64_t n = m_root ? 1 : 0;
    for (const interval& i : m_stack) n += i.upper - i.lower;
    return n;
  }

  static void reduce(result& into, const result& from) noexcept {
    into.nodes += from.nodes;
    into.leaves += from.leaves;
    into.max_depth = std::max(into.max_depth, from.max_depth);
  }

  // Loot travels with the tree's parameters (a thief rebuilds the tables).
  friend void apgas_serialize(apgas::byte_writer& w, const basic_bag& b) {
    apgas::serialize_all(w, b.m_tree.params(), b.m_root, b.m_stack);
  }
  friend basic_bag apgas_deserialize(apgas::byte_reader& r, std::type_identity<basic_bag>) {
    auto [params, root, stack] =
        apgas::deserialize_all<tree_params, bool, std::vector<interval>>(r);
    basic_bag b{tree(params)};
    b.m_root = root;
    b.m_stack = std::move(stack);
    return b;
  }

private:
  /// Visits up to min(n, k_many) pending children, from the top node down, hashed together.
  /// Taken from the top first, so that every node above the lowest one touched is done with.
  std::size_t visit_many(std::size_t n, result& r) {
    const digest* parents[k_many] = {};
    std::uint32_t index[k_many] = {};
    std::uint32_t depth[k_many] = {};
    const std::size_t most = std::min(n, k_many);
    std::size_t k = 0;
    for (std::size_t i = m_stack.size(); i-- > 0 && k < most;) {
      interval& iv = m_stack[i];
      for (; iv.upper > iv.lower && k < most; ++k) {
        parents[k] = &iv.state;
        index[k] = --iv.upper;
        depth[k] = iv.depth + 1;
      }
    }
    digest children[k_many];
    Hash::many(parents, index, static_cast<unsigned>(k), children);
    while (!m_stack.empty() && m_stack.back().upper == m_stack.back().lower) m_stack.pop_back();
    for (std::size_t c = k; c-- > 0;) visit(children[c], depth[c], r); // pushes: after the reads
    return k;
  }

  void visit(const digest& state, std::uint32_t depth, result& r) {
    ++r.nodes;
    r.max_depth = std::max<std::uint64_t>(r.max_depth, depth);
    const int n = m_tree.children(state, depth);
    if (n > 0) m_stack.push_back({state, depth, 0, static_cast<std::uint32_t>(n)});
    else ++r.leaves;
  }

  tree m_tree;
  bool m_root = false; ///< the root itself is still to be visited
  std::vector<interval> m_stack;
};

/// @brief The bag UTS runs with.
using bag = basic_bag<sha1_fast>;

/// @brief The sequential search: the same bag, processed by one thread.
template <class Hash = sha1_fast>
result search_seq(const tree& t) {
  basic_bag<Hash> b = basic_bag<Hash>::whole(t);
  result r;
  while (!b.empty()) b.process(std::size_t{1} << 20, r);
  return r;
}

} // namespace apgas_apps::uts
