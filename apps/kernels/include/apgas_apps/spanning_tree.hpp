/// @file Spanning tree of a connected graph, after the Tascell/Cilk paper on probabilistically
/// balanced divide-and-conquer graph traversal (JIP Vol. 20 No. 1; research seed 004), three
/// ways: the explicit-stack sequential DFS; that same DFS split on demand (Tascell's way:
/// spanning_tree_on_demand, the fastest); and a parallel DFS with a depth budget and overflow
/// accumulation (the paper's Cilk version, Figs 4-9: spanning_tree).
///
/// The depth-limited version, in detail: one async per newly visited vertex nests as deep as the
/// DFS goes: millions of levels on a 2D torus. In Cilk that overflows the native stack. apgas
/// spawns by symmetric transfer (and the workers bounce transfers when the stack gets deep), so
/// nesting costs no native stack, but every level keeps a coroutine frame alive (and, under
/// help-first, the deques fill with pending siblings): O(V) memory, and a long thin DFS path that a
/// thief can only nibble at, which costs both memory and time on a large torus
/// (docs/performance.md). So the recursion carries a budget. A vertex reached with budget 0 is
/// claimed but not expanded; it goes into an overflow accumulator. When the traversal has quiesced
/// (its finish ended), a new *stage* expands every accumulated vertex with a fresh budget, in
/// parallel (a finish over a loop split in halves), and so on until a stage overflows nothing.
/// Bounded depth also makes each stage a wide, "probabilistically balanced" divide-and-conquer.
///
///     apgas_apps::reset_parents(parent);                              // all k_unvisited
///     rt.run(apgas_apps::spanning_tree_on_demand(g, 0, parent));        // parent[v]: v's parent
///     auto stats = rt.run(apgas_apps::spanning_tree(g, 0, parent, 1000)); // depth-limited
#pragma once

#include <apgas/apgas.hpp>

#include "apgas_apps/graph.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace apgas_apps {

/// @brief parent[v] of a vertex not reached yet.
inline constexpr vertex_id k_unvisited = std::numeric_limits<vertex_id>::max();
/// @brief The recursion budget of a stage: a bounded number of live frames per chain. The
/// paper's C_LIMIT is 30; here 1000, because on long paths (a torus) a small limit makes many
/// stages and overflows many vertices, each expanded again later from a chunk, far from where
/// it was claimed, while the frames 1000 levels keep alive are few beside the graph. Where the
/// limit rarely binds (random, hypercube and bintree graphs) 30 and 1000 do the same; figures in
/// docs/performance.md.
inline constexpr unsigned k_default_depth_limit = 1000;

/// @brief What a parallel traversal did besides filling the parent array.
struct spanning_tree_stats {
  std::uint32_t stages = 0;     ///< rounds over overflowed vertices after the first traversal
  std::uint64_t overflowed = 0; ///< vertices accumulated (over all stages)
};

/// @brief Marks every vertex unvisited (the precondition of both traversals).
inline void reset_parents(std::span<vertex_id> parent) {
  std::fill(parent.begin(), parent.end(), k_unvisited);
}

/// @brief Sequential reference (the paper's Fig. 3): DFS with an explicit vertex stack, so it
/// works on any graph without deep recursion. pre: parent all k_unvisited, root < n.
[[gnu::noinline]] inline void spanning_tree_seq(const csr_graph& g, vertex_id root,
                                                std::span<vertex_id> parent) {
  std::vector<vertex_id> stack;
  parent[root] = root;
  stack.push_back(root);
  while (!stack.empty()) {
    const vertex_id v = stack.back();
    stack.pop_back();
    for (const vertex_id w : g.neighbours(v)) {
      if (parent[w] != k_unvisited) continue;
      parent[w] = v;
      stack.push_back(w);
    }
  }
}

namespace spanning_tree_detail {

/// @brief A small array of overflowed vertices; a list of them is a vertex accumulator.
struct vertex_chunk {
  static constexpr std::uint32_t k_capacity = 1023; // 4 KiB with the size
  std::uint32_t m_size = 0;
  std::array<vertex_id, k_capacity> m_items; // [0, m_size) valid; not zeroed on purpose
};
using chunk_list = std::vector<std::unique_ptr<vertex_chunk>>;

/// @brief The overflowed vertices of one stage: one chunk list per thread that pushed, so that
/// pushing takes no lock and no atomic (the paper's per-worker "long-term workspace").
///
/// Why per thread and not per activity: an activity may move between threads only at its
/// suspension points, and push() runs without one, so during a push the calling thread's list
/// is touched by that thread alone. Activities never hold a list across a co_await.
/// Thread-safety: push() from any thread while the stage runs; take_all() only when no
/// activity of the traversal runs (after the stage's finish).
class overflow_accumulator {
public:
  overflow_accumulator() : m_id(next_id()) {}
  overflow_accumulator(const overflow_accumulator&) = delete;
  overflow_accumulator& operator=(const overflow_accumulator&) = delete;

  /// @brief Appends v to the calling thread's list.
  /// noinline: the caller is a coroutine that may resume on another thread after each
  /// co_await, and a compiler may keep the address of a thread_local computed before a
  /// suspension point (it cannot see the thread change). Looking the list up inside an
  /// opaque call makes every push find the list of the thread that runs it.
  [[gnu::noinline]] void push(vertex_id v) {
    chunk_list& list = local_list();
    if (list.empty() || list.back()->m_size == vertex_chunk::k_capacity) {
      // _for_overwrite: value-initialising would zero 4 KiB that is about to be written.
      list.push_back(std::make_unique_for_overwrite<vertex_chunk>());
    }
    vertex_chunk& c = *list.back();
    c.m_items[c.m_size++] = v;
  }

  /// @brief Takes every non-empty chunk of every thread, leaving the lists empty for the next
  /// stage. Every push happens-before this call: each push is sequenced before the end of its
  /// strand, whose release-decrement of the finish count the finish's completion acquires.
  chunk_list take_all() {
    chunk_list out;
    std::lock_guard lock(m_mutex); // against a thread registering (not expected here)
    for (auto& list : m_lists) {
      for (auto& c : *list)
        if (c->m_size != 0) out.push_back(std::move(c));
      list->clear();
    }
    return out;
  }

private:
  /// The list this thread used last, tagged with the accumulator it belongs to. Tagged by a
  /// process-unique id rather than the accumulator's address, which a later accumulator may
  /// reuse.
  struct thread_cache {
    std::uint64_t m_owner = 0;
    chunk_list* m_list = nullptr;
  };

  static thread_cache& cache() noexcept {
    thread_local thread_cache c;
    return c;
  }

  chunk_list& local_list() {
    thread_cache& c = cache();
    if (c.m_owner == m_id) return *c.m_list;
    // First push of this thread into this accumulator (or it used another one since: then it
    // just gets a fresh list; the old one stays registered, so nothing is lost).
    std::lock_guard lock(m_mutex);
    m_lists.push_back(std::make_unique<chunk_list>());
    c = {m_id, m_lists.back().get()};
    return *c.m_list;
  }

  static std::uint64_t next_id() noexcept {
    // relaxed: only uniqueness matters; the ids order nothing.
    static std::atomic<std::uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1; // 0 means "no owner"
  }

  const std::uint64_t m_id;
  std::mutex m_mutex; ///< guards m_lists (the vector, not the lists' contents)
  std::vector<std::unique_ptr<chunk_list>> m_lists;
};

/// @brief What every activity of one traversal shares (read-only, except through the parent
/// array and the accumulator).
struct traversal {
  const csr_graph& m_graph;
  vertex_id* m_parent;
  unsigned m_depth_limit;
  overflow_accumulator& m_overflow;
};

/// @brief Makes v the parent of w if w is unvisited; true if this call won w.
inline bool try_claim(vertex_id* parent, vertex_id w, vertex_id v) noexcept {
  std::atomic_ref<vertex_id> slot(parent[w]);
  // Test, then compare-and-swap (the paper's cas_int): most neighbours are already visited,
  // and a load does not take the cache line exclusively. relaxed, load and CAS alike: the
  // CAS's atomicity alone picks the one winner; parent[w] publishes nothing else (the graph
  // was built before the run started, and the traversal's results are read after its finish,
  // which orders them).
  if (slot.load(std::memory_order_relaxed) != k_unvisited) return false;
  vertex_id expected = k_unvisited;
  return slot.compare_exchange_strong(expected, v, std::memory_order_relaxed,
                                      std::memory_order_relaxed);
}

/// @brief Expands v (already claimed) with no budget left: claims its unvisited neighbours and
/// saves them for the next stage.
inline void visit_last(const traversal& t, vertex_id v) {
  for (const vertex_id w : t.m_graph.neighbours(v))
    if (try_claim(t.m_parent, w, v)) t.m_overflow.push(w);
}

/// @brief Expands v (already claimed) and the subtree it wins, down to `budget` levels: each
/// claimed neighbour is visited with one less budget, or, with no budget left, saved for the
/// next stage. The activities escape: the stage's finish waits for them all.
///
/// Unlike the paper's Fig. 6, which spawns every claimed neighbour, the last neighbour that v
/// claims is expanded in this same activity, by looping (a hand-made tail call): only its
/// earlier siblings become activities, each spawned when the next sibling is claimed. A DFS
/// tree is mostly paths (on a torus nearly every vertex has a single child), so this saves
/// most spawns and frames and keeps the same stealable continuations: what a thief takes is
/// v's remaining loop and chain.
inline apgas::task<> visit(const traversal& t, vertex_id v, unsigned budget) {
  for (;;) {
    vertex_id next = k_unvisited; // claimed, not expanded yet
    for (const vertex_id w : t.m_graph.neighbours(v)) {
      if (!try_claim(t.m_parent, w, v)) continue;
      if (budget == 0) {
        t.m_overflow.push(w);
      } else if (budget == 1) {
        visit_last(t, w); // a few claims: not worth an activity
      } else {
        if (next != k_unvisited) co_await apgas::async(visit(t, next, budget - 1));
        next = w;
      }
    }
    if (next == k_unvisited) co_return;
    v = next;
    --budget;
  }
}

/// Vertices of a stage below which one activity expands them in sequence (each expansion
/// still spawns its own activities).
inline constexpr std::size_t k_stage_grain = 8;

/// @brief Expands vs[0, n) with a full budget: halves split off as activities, then in turn.
inline apgas::task<> visit_range(const traversal& t, const vertex_id* vs, std::size_t n) {
  while (n > k_stage_grain) {
    const std::size_t half = n / 2;
    co_await apgas::async(visit_range(t, vs, half));
    vs += half;
    n -= half;
  }
  for (std::size_t i = 0; i < n; ++i) co_await visit(t, vs[i], t.m_depth_limit);
}

/// @brief Expands the vertices of chunks[0, n): the array of chunks is split in halves, then
/// each chunk's range (the paper's "array of arrays" of Section 5.1).
inline apgas::task<> visit_chunks(const traversal& t, const std::unique_ptr<vertex_chunk>* chunks,
                                  std::size_t n) {
  while (n > 1) {
    const std::size_t half = n / 2;
    co_await apgas::async(visit_chunks(t, chunks, half));
    chunks += half;
    n -= half;
  }
  if (n == 1) co_await visit_range(t, chunks[0]->m_items.data(), chunks[0]->m_size);
}

} // namespace spanning_tree_detail

/// @brief Parallel spanning tree of the component of `root`: on return parent[v] is v's parent
/// for every vertex reached, parent[root] == root. `depth_limit` is the recursion budget of
/// each stage (0: every stage is one BFS level). pre: parent has g.vertex_count() entries,
/// all k_unvisited; root < g.vertex_count(). g and parent must outlive the task.
inline apgas::task<spanning_tree_stats>
spanning_tree(const csr_graph& g, vertex_id root, std::span<vertex_id> parent,
              unsigned depth_limit = k_default_depth_limit) {
  using namespace spanning_tree_detail;
  overflow_accumulator overflow;
  const traversal t{g, parent.data(), depth_limit, overflow};
  spanning_tree_stats stats;
  // relaxed: no activity of this traversal exists yet; the asyncs below are ordered after it.
  std::atomic_ref<vertex_id>(parent[root]).store(root, std::memory_order_relaxed);
  co_await apgas::finish([&]() -> apgas::task<> { co_await visit(t, root, depth_limit); });
  for (;;) {
    // The list-to-array step of the paper: the stage iterates over an array of chunks.
    chunk_list stage = overflow.take_all();
    if (stage.empty()) break;
    ++stats.stages;
    for (const auto& c : stage) stats.overflowed += c->m_size;
    co_await apgas::finish(
        [&]() -> apgas::task<> { co_await visit_chunks(t, stage.data(), stage.size()); });
  } // `stage` is freed here: its vertices have all been expanded
  co_return stats;
}

/// @brief Parallel spanning tree of the component of `root` by on-demand splitting: the
/// sequential explicit-stack DFS of spanning_tree_seq, run by apgas::traverse_on_demand, so
/// that a worker hands the oldest half of its stack to another only when that one asks (the
/// Tascell way). While one part runs alone it claims vertices with plain stores, as the
/// sequential DFS does; once parts run in parallel, with a compare-and-swap (two workers may
/// reach one vertex at once). At one worker it is the sequential DFS plus a look at two flags
/// per vertex. On return
/// parent[v] is v's parent for every vertex reached, parent[root] == root.
/// pre: as spanning_tree.
inline apgas::task<> spanning_tree_on_demand(const csr_graph& g, vertex_id root,
                                             std::span<vertex_id> parent) {
  vertex_id* const p = parent.data();
  // relaxed: no activity of this traversal exists yet; its parts are ordered after it.
  std::atomic_ref<vertex_id>(p[root]).store(root, std::memory_order_relaxed);
  std::vector<vertex_id> roots(1, root);
  co_await apgas::traverse_on_demand(std::move(roots),
                                     [&g, p](vertex_id v, apgas::work_list<vertex_id>& more) {
                                       if (more.alone()) {
                                         // No other part runs: the sequential DFS's claim, with
                                         // plain loads and stores (no data race: alone() orders
                                         // every other part's claims before these, and the spawn of
                                         // a later part orders these before its claims). Plain, not
                                         // even relaxed atomics: a store to a vertex_id then cannot
                                         // alias the list's pointers, which stay in registers.
                                         for (const vertex_id w : g.neighbours(v)) {
                                           if (p[w] != k_unvisited) continue;
                                           p[w] = v;
                                           more.push(w);
                                         }
                                         return;
                                       }
                                       for (const vertex_id w : g.neighbours(v))
                                         if (spanning_tree_detail::try_claim(p, w, v)) more.push(w);
                                     });
}

/// @brief The verdict on a parent array.
struct spanning_tree_check {
  bool ok = false;
  std::uint64_t tree_edges = 0; ///< vertices other than the root with a valid parent edge
  std::string error;            ///< why not ok (the first problem found)
};

/// @brief Checks that `parent` is a spanning tree of g rooted at `root`: every vertex has a
/// parent, the root is its own parent, each (v, parent[v]) is an edge of g, and following
/// parents from any vertex reaches the root without a cycle. O(V + E) time, O(V) space.
inline spanning_tree_check check_spanning_tree(const csr_graph& g, vertex_id root,
                                               std::span<const vertex_id> parent) {
  spanning_tree_check r;
  const std::uint32_t n = g.vertex_count();
  auto fail = [&](std::string why) {
    r.ok = false;
    r.error = std::move(why);
    return r;
  };
  if (parent.size() != n) return fail("parent array has the wrong size");
  if (root >= n) return fail("root out of range");
  if (parent[root] != root) return fail("the root is not its own parent");
  for (vertex_id v = 0; v < n; ++v) {
    if (v == root) continue;
    const vertex_id p = parent[v];
    if (p == k_unvisited) return fail("vertex " + std::to_string(v) + " has no parent");
    if (p >= n || p == v)
      return fail("vertex " + std::to_string(v) + " has invalid parent " + std::to_string(p));
    const auto nbrs = g.neighbours(v);
    if (std::find(nbrs.begin(), nbrs.end(), p) == nbrs.end())
      return fail("parent edge (" + std::to_string(v) + ", " + std::to_string(p) +
                  ") is not an edge of the graph");
    ++r.tree_edges;
  }
  // Every vertex is walked up at most twice over its whole lifetime: states go unknown ->
  // on_path -> rooted and never back. Meeting an on_path vertex again means a cycle.
  enum : std::uint8_t { unknown, on_path, rooted };
  std::vector<std::uint8_t> state(n, unknown);
  state[root] = rooted;
  for (vertex_id v = 0; v < n; ++v) {
    vertex_id u = v;
    while (state[u] == unknown) {
      state[u] = on_path;
      u = parent[u];
    }
    if (state[u] == on_path)
      return fail("the parent pointers from vertex " + std::to_string(v) + " form a cycle");
    for (u = v; state[u] == on_path; u = parent[u]) state[u] = rooted;
  }
  r.ok = true;
  return r;
}

} // namespace apgas_apps
