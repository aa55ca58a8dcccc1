/// @file On-demand splitting: a loop or a traversal that runs sequentially and hands part of
/// its remaining work to another worker only when that worker asks for it.
///
///     // Every index once, in order on one worker; split in halves only when a worker asks.
///     co_await apgas::for_on_demand(0, n, [&](std::int64_t i) { row[i] = work(i); });
///
///     // Depth-first from the roots: visit(v, more) pushes what v leads to onto more.
///     co_await apgas::traverse_on_demand(std::vector<vertex>{root},
///         [&](vertex v, apgas::work_list<vertex>& more) {
///           for (vertex w : neighbours(v)) if (claim(w, v)) more.push(w);
///         });
///
/// A spawn per item (or per recursive call) costs a frame, a deque push and a pop even when no
/// worker is idle, which is most of the time. Here the items run in a plain loop, as sequential
/// code would, and the loop looks at one flag per item: the flag a thief raises on this worker's
/// deque when it finds nothing to steal (detail/deque.hpp). Only then does the loop split: the
/// upper half of a range, or the oldest half of a work list (the items nearest the roots, so
/// the largest subtrees: Tascell's backtracking to the oldest split point), becomes a new
/// activity, which the thief takes. At one worker nobody asks and nothing is ever split.
///
/// Rules:
///  - The body is a plain function (not a task): it runs once per item, inline in the loop.
///    Several workers call it at once, each on its own items: it must be safe to call
///    concurrently (capture by reference what it updates, and update shared data atomically).
///  - Both return once every item has run, split-off parts included (each call is a finish of
///    its own). Items run in an unspecified order across workers; within one part, a range runs
///    in increasing order and a work list last-in first-out (depth first).
///  - An exception thrown by the body ends the part that threw it (its items not yet run are
///    dropped); the other parts run to their end, then the call throws what finish throws (the
///    exception, or apgas::multiple_exceptions if several parts threw).
///  - Memory: a work list is one vector per part; a split allocates one for the new part, and no
///    item allocates anything (vertices pushed onto a list reuse its capacity).
#pragma once

#include "apgas/exceptions.hpp"
#include "apgas/finish.hpp"
#include "apgas/task.hpp"

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

namespace apgas {

template <class T>
class work_list;

namespace detail {

/// @brief The wanted flag of the worker that runs the caller (see worker::work_wanted_flag), or
/// a flag nobody raises on a thread that is no worker. Out of line: a coroutine may resume on
/// another thread after each co_await, and a compiler may keep the address of a thread_local
/// computed before it; a call after each resumption finds the worker that runs it now.
[[gnu::noinline]] const std::atomic<bool>& wanted_flag_here() noexcept;

/// @brief Counts `items` items run by an on-demand loop toward the worker's next busy poll of the
/// network (a loop that never pushes would otherwise never serve the place's messages).
[[gnu::noinline]] void count_items_toward_poll(std::uint32_t items) noexcept;

/// @brief Raises the calling worker's wanted flag, as a thief that found nothing does: tests
/// use it to split at chosen points. No effect on a thread that is no worker.
void ask_this_worker_for_work() noexcept;

/// Items an on-demand loop runs between two counts toward a network poll.
inline constexpr std::uint32_t k_items_per_poll_count = 4096;
/// Counted per k_items_per_poll_count items: one busy poll per 4096 items (see
/// worker::k_busy_poll_pushes), a few percent of a short item's cost at most.
inline constexpr std::uint32_t k_pushes_per_poll_count = 1024;

/// @brief Indices of the loop: integers other than bool.
template <class I>
concept loop_index = std::integral<I> && !std::same_as<std::remove_cv_t<I>, bool>;

/// @brief last - first for first < last, without overflow (INT_MIN to INT_MAX is a range).
template <loop_index I>
std::make_unsigned_t<I> distance(I first, I last) noexcept {
  using U = std::make_unsigned_t<I>;
  return static_cast<U>(static_cast<U>(last) - static_cast<U>(first));
}

/// @brief Runs body(i) for i in [first, last) in order, until the range is done (false) or the
/// worker is asked for work while at least two indices are left (true; `first` is the next).
template <loop_index I, class Body>
bool run_range_until_asked(I& first, I last, const Body& body, const std::atomic<bool>& wanted) {
  std::uint32_t until_count = k_items_per_poll_count;
  while (first < last) {
    // relaxed: a hint, as in the deque's own look at it; a request seen one item late is
    // answered one item late.
    if (wanted.load(std::memory_order_relaxed) && distance(first, last) >= 2) [[unlikely]]
      return true;
    if (--until_count == 0) [[unlikely]] {
      count_items_toward_poll(k_pushes_per_poll_count);
      until_count = k_items_per_poll_count;
    }
    body(first);
    ++first;
  }
  return false;
}

/// @brief One part of a for_on_demand: [first, last), whose upper half leaves whenever asked.
template <loop_index I, class Body>
task<> for_part(I first, I last, const Body& body) {
  while (run_range_until_asked(first, last, body, wanted_flag_here())) {
    using U = std::make_unsigned_t<I>;
    const I mid = static_cast<I>(static_cast<U>(first) + distance(first, last) / 2);
    // Our push answers the request: under work-first the thief takes this frame's
    // continuation (the lower half) while this worker runs the upper one; under help-first it
    // takes the upper half. Either way the two halves run in parallel.
    co_await async(for_part(mid, last, body));
    last = mid;
  }
}

template <class T, class Visit>
bool run_list_until_asked(work_list<T>& list, const Visit& visit, const std::atomic<bool>& wanted);

/// @brief What a call's finish threw: the body's exception itself if only one part failed
/// (as a sequential loop would throw it), else all of them.
[[noreturn]] void rethrow_parts_failure(const multiple_exceptions& e);

/// @brief co_await finish(body), with a failure rethrown by rethrow_parts_failure (a throw,
/// not a co_await, inside the handler: allowed in a coroutine).
template <class Body>
task<> finish_parts(Body body) {
  try {
    co_await finish(std::move(body));
  } catch (const multiple_exceptions& e) {
    rethrow_parts_failure(e);
  }
}

/// Items a traversal's part visits between two looks at the wanted flag.
inline constexpr std::uint32_t k_items_between_looks = 64;

/// @brief Parts of one traversal that run now (started and not ended).
struct running_parts {
  std::atomic<std::uint32_t> count{1}; // the first part
  /// True if the caller's part is the only one running (see work_list::alone).
  bool alone() const noexcept {
    // acquire: pairs with the release of each ended part's decrement (see traverse_part), so
    // that its writes happen before what the caller's part does next.
    return count.load(std::memory_order_acquire) == 1;
  }
};

template <class T, class Visit>
task<> traverse_part(std::vector<T> items, const Visit& visit, running_parts& parts);

} // namespace detail

/// @brief The items still to visit in one part of a traversal_on_demand: visit(item, more) pushes
/// onto `more` what its item leads to. Last in, first out (depth first). Thread-safety: one part
/// only (the visit call that was given it).
template <class T>
class work_list {
public:
  /// @brief Appends an item: it is visited next unless others are pushed after it.
  void push(const T& item) { m_items.push_back(item); }
  /// @copydoc push(const T&)
  void push(T&& item) { m_items.push_back(std::move(item)); }
  /// @brief Constructs an item in place at the end.
  template <class... A>
  void emplace(A&&... args) {
    m_items.emplace_back(std::forward<A>(args)...);
  }
  /// @brief Items waiting in this part (not those of other parts).
  std::size_t size() const noexcept { return m_items.size(); }
  bool empty() const noexcept { return m_items.empty(); }
  /// @brief True only while this part is the only one of the traversal that runs: no other
  /// visit runs meanwhile, and none can start before this one returns (only a running part
  /// splits, between two visits). A visit may then use plain reads and writes where parts
  /// would race (a relaxed store instead of a compare-and-swap): what ended parts wrote
  /// happens before. Looked up every few dozen items: it may say false for a while after the
  /// other parts ended.
  bool alone() const noexcept { return m_alone; }

private:
  work_list(std::vector<T>&& items, detail::running_parts& parts) noexcept
      : m_items(std::move(items)), m_parts(&parts) {}

  /// The oldest half (at least one item), removed from this list, for a new part.
  std::vector<T> take_oldest_half() {
    const auto half = static_cast<std::ptrdiff_t>(m_items.size() / 2);
    std::vector<T> older(std::make_move_iterator(m_items.begin()),
                         std::make_move_iterator(m_items.begin() + half));
    m_items.erase(m_items.begin(), m_items.begin() + half);
    return older;
  }

  template <class U, class Visit>
  friend bool detail::run_list_until_asked(work_list<U>&, const Visit&, const std::atomic<bool>&);
  template <class U, class Visit>
  friend task<> detail::traverse_part(std::vector<U>, const Visit&, detail::running_parts&);

  std::vector<T> m_items;
  detail::running_parts* m_parts;
  bool m_alone = false; ///< set by the loop (run_list_until_asked) from m_parts
};

namespace detail {

/// @brief Visits the newest item of `part` until it is empty (false) or the worker is asked
/// for work while at least two items wait (true). The flags are looked at every
/// k_items_between_looks items, not every item: the inner loop is then the sequential one
/// (a pop and a visit), and a thief waits at most that many items for its answer.
template <class T, class Visit>
bool run_list_until_asked(work_list<T>& part, const Visit& visit, const std::atomic<bool>& wanted) {
  // The loop works on a list of its own, moved back at the end: the part's list lives in the
  // coroutine frame, which the visit's atomic operations would make the compiler reload on
  // every item; this one's address never escapes the loop (visit is inlined), so its vector
  // stays in registers, as the sequential code's stack does.
  work_list<T> list(std::move(part.m_items), *part.m_parts);
  struct move_back {
    work_list<T>& from;
    work_list<T>& to;
    ~move_back() { to.m_items = std::move(from.m_items); } // also when visit throws
  } guard{list, part};
  std::uint32_t until_count = k_items_per_poll_count / k_items_between_looks;
  while (!list.m_items.empty()) {
    // relaxed: see run_range_until_asked.
    if (wanted.load(std::memory_order_relaxed) && list.m_items.size() >= 2) [[unlikely]]
      return true;
    // Alone stays true until this part splits (only a running part splits); false may turn
    // true whenever the others end, which the next look sees.
    list.m_alone = list.m_parts->alone();
    if (--until_count == 0) [[unlikely]] {
      count_items_toward_poll(k_pushes_per_poll_count);
      until_count = k_items_per_poll_count / k_items_between_looks;
    }
    for (std::uint32_t n = k_items_between_looks; n != 0 && !list.m_items.empty(); --n) {
      T item = std::move(list.m_items.back());
      list.m_items.pop_back();
      visit(std::move(item), list);
    }
  }
  return false;
}

/// @brief One part of a traverse_on_demand, whose oldest half leaves whenever asked. pre: the
/// part is counted in `parts`; it is uncounted when it ends.
template <class T, class Visit>
task<> traverse_part(std::vector<T> items, const Visit& visit, running_parts& parts) {
  struct uncount {
    running_parts& parts;
    // release: what this part wrote happens before a part that then sees itself alone.
    ~uncount() { parts.count.fetch_sub(1, std::memory_order_release); } // also when it throws
  } guard{parts};
  work_list<T> list(std::move(items), parts);
  while (run_list_until_asked(list, visit, wanted_flag_here())) {
    // relaxed: sequenced before the spawn, which publishes it to whoever runs either half.
    parts.count.fetch_add(1, std::memory_order_relaxed);
    co_await async(traverse_part(list.take_oldest_half(), visit, parts)); // see for_part
  }
}

} // namespace detail

/// @brief Runs body(i) for every i in [first, last) and returns once all have run: in order
/// on one worker, split in halves only when another worker asks for work (see the top of this
/// file). Nothing runs if first >= last.
template <detail::loop_index I, class Body>
task<> for_on_demand(I first, I last, Body body) {
  static_assert(std::is_invocable_v<const Body&, I>,
                "apgas::for_on_demand: the body must be callable as body(i), i of the range's "
                "type, through a const reference (it is shared by the parts)");
  static_assert(!detail::is_task_v<std::invoke_result_t<const Body&, I>>,
                "apgas::for_on_demand: the body must be a plain function, not a task: it runs "
                "once per index, inline in the loop");
  if (!(first < last)) co_return;
  co_await detail::finish_parts(
      [&]() -> task<> { co_await detail::for_part(first, last, std::as_const(body)); });
}

/// @brief Visits `roots` and every item visit(item, more) pushes onto `more`, depth first, and
/// returns once all have been visited: sequentially on one worker, splitting off the oldest half
/// of a part's items only when another worker asks for work (see the top of this file).
template <class T, class Visit>
task<> traverse_on_demand(std::vector<T> roots, Visit visit) {
  static_assert(std::is_invocable_v<const Visit&, T, work_list<T>&>,
                "apgas::traverse_on_demand: visit must be callable as visit(T item, "
                "apgas::work_list<T>& more) through a const reference (it is shared by the parts)");
  static_assert(!detail::is_task_v<std::invoke_result_t<const Visit&, T, work_list<T>&>>,
                "apgas::traverse_on_demand: visit must be a plain function, not a task: it runs "
                "once per item, inline in the loop");
  if (roots.empty()) co_return;
  detail::running_parts parts;
  co_await detail::finish_parts([&]() -> task<> {
    co_await detail::traverse_part(std::move(roots), std::as_const(visit), parts);
  });
}

} // namespace apgas
