// One worker thread of a place: its deque, its counters, and the hot paths of spawning an
// activity and ending a strand (inline, because they run once per async).
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/deque.hpp"
#include "apgas/detail/frame_pool.hpp"
#include "apgas/detail/idle_gate.hpp"
#include "apgas/detail/spin_lock.hpp"

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace apgas::detail {

class scheduler;

/// @brief Per-worker event counters. Written only by the owning worker; read after it stopped,
/// or while it runs through the copies it publishes now and then (published_counters).
struct worker_counters {
  std::uint64_t spawns = 0;         ///< asyncs started
  std::uint64_t steal_attempts = 0; ///< victims probed
  std::uint64_t steals = 0;         ///< items taken from another worker
  std::uint64_t shared = 0;         ///< items its deque made public (read from it at the end)
  std::uint64_t parks = 0;          ///< times the worker went to sleep
  std::uint64_t injected = 0;       ///< items taken from the place's injection queue
};

/// @brief Copies of a worker's counters that other threads may read while it runs (progress
/// lines). The owner stores them every 1024 pushes and when it runs out of work: the hot path
/// stays free of atomics. relaxed everywhere: figures for people, nothing is ordered by them.
struct published_counters {
  std::atomic<std::uint64_t> spawns{0};
  std::atomic<std::uint64_t> steals{0};
  std::atomic<std::uint64_t> parks{0};
  std::atomic<std::uint64_t> injected{0};
  void publish(const worker_counters& c) noexcept {
    spawns.store(c.spawns, std::memory_order_relaxed);
    steals.store(c.steals, std::memory_order_relaxed);
    parks.store(c.parks, std::memory_order_relaxed);
    injected.store(c.injected, std::memory_order_relaxed);
  }
};

/// @brief A worker: one thread, one deque.
class worker {
public:
  /// `workers`: how many the place has (with one, nobody steals).
  worker(scheduler& sched, unsigned index, unsigned workers, idle_gate& gate) noexcept
      : m_sched(&sched), m_index(index), m_rng(0x9E3779B97F4A7C15ULL * (index + 1)) {
    m_deque.set_gate(&gate, workers > 1); // woken when the deque makes items public
  }

  /// @brief Owner only: pushes an item on the deque (private until a thief asks, see
  /// deque.hpp). Every k_busy_poll_pushes pushes, also polls the place's network (see
  /// busy_poll).
  [[gnu::always_inline]] void push(deque_item item) {
    m_deque.push(item);
    if (--m_pushes_until_poll == 0) [[unlikely]]
      busy_poll();
  }

  /// @brief Owner only: counts work that pushes no item (an aggregator's batch) as `pushes`
  /// pushes toward the next busy poll, so that a place busy with such work still serves its
  /// network (the other places' messages, its own sends waiting for their receivers).
  void count_toward_poll(std::uint32_t pushes) noexcept {
    if (m_pushes_until_poll <= pushes) busy_poll();
    else m_pushes_until_poll -= pushes;
  }

  /// @brief Owner only, between two strands (see m_between_strands): makes an item that a
  /// message handler created stealable at once, without the busy-poll countdown of push().
  void push_between_strands(deque_item item) { m_deque.push_public(item); }

  /// @brief Owner only: applies the ends of proxy strands that end_strand put off (see there).
  /// Called before the worker looks for other work, so that they never outlive the chain of
  /// that proxy's activities this worker was running.
  void flush_deferred_ends() noexcept {
    if (m_deferred_end == nullptr) return;
    finish_state* f = std::exchange(m_deferred_end, nullptr);
    g_remote_hooks.end_proxy_strands(*f, std::exchange(m_deferred_ends, 0));
  }

  /// True while this worker polls the network from its search for work, between two strands:
  /// message handlers it runs then put the work they create straight into its deque, which
  /// holds no continuation at that point (see scheduler::inject). Owner only.
  bool m_between_strands = false;
  /// The first item a message handler created during that poll (an `at` caller to resume,
  /// typically): find_work runs it right after the poll, without the deque's push and pop
  /// (two fences on the path of every `at` reply). Later ones go to the deque. Owner only.
  deque_item m_handoff = 0;
  /// Set by find_work when its network poll delivered messages but left no work. Owner only.
  bool m_served_messages = false;

  /// Pushes between two network polls of a busy worker: rare enough to cost nothing per
  /// spawn, often enough (microseconds apart in fine-grained code) that other places' `at`
  /// requests and finish reports are not left waiting until this place runs out of work.
  static constexpr std::uint32_t k_busy_poll_pushes = 1024;

  /// @brief Owner only: the end of a strand that did not join its parent implicitly nor
  /// hand its count over. `next` is what the owner popped (0 if nothing), `units` what the
  /// strand carried (see promise_base::m_role); returns what to resume.
  std::coroutine_handle<> end_strand(finish_state* f, deque_item next, bool was_work_first_child,
                                     std::uint32_t units) noexcept;

  /// @brief Owner only: the running activity suspends until an external event (a reply from
  /// another place, a clock phase) resumes it, maybe on another worker. Whatever is at the
  /// bottom of our deque (its parent's continuation, typically) becomes a strand of its own
  /// now, counted before the caller publishes anything that could resume the activity.
  /// Returns what this worker runs next.
  std::coroutine_handle<> suspend_for_external() noexcept;

  /// @brief Thief side: try to take one item from this worker. Counts a stolen continuation
  /// as a new strand before anyone can observe the steal.
  deque_item steal_from() noexcept;

  /// @brief Owner only: raised while a thief that found nothing public waits for this worker
  /// to share (see ws_deque::wanted_flag).
  const std::atomic<bool>& work_wanted_flag() const noexcept { return m_deque.wanted_flag(); }
  /// @brief Any thread: asks this worker to share work, as a thief that found nothing does.
  void ask_for_work() noexcept { m_deque.want_work(); }

  scheduler& sched() const noexcept { return *m_sched; }
  unsigned index() const noexcept { return m_index; }
  std::uint64_t next_random() noexcept { // xorshift64*, owner only
    m_rng ^= m_rng >> 12;
    m_rng ^= m_rng << 25;
    m_rng ^= m_rng >> 27;
    return m_rng * 0x2545F4914F6CDD1DULL;
  }

  /// @brief Owner only: hands `next` over by symmetric transfer, unless this thread's native
  /// stack is already deep, in which case `next` bounces through the worker loop.
  ///
  /// Why: with optimisation, GCC compiles a symmetric transfer as a tail call and the native
  /// stack does not grow; at -O0/-O1 and under sanitizers it is a plain call, and a long chain
  /// of asyncs would overflow the stack. The check costs a compare when transfers are tail calls.
  std::coroutine_handle<> transfer(std::coroutine_handle<> next) noexcept {
    // The stack is measured every k_transfers_per_check transfers only: a countdown costs less
    // than the measure, and a stack that grows (no tail calls) grows by at most that many
    // frames between two checks, a few KiB against k_max_transfer_stack.
    if (--m_transfers_until_check != 0) [[likely]]
      return next;
    m_transfers_until_check = k_transfers_per_check;
    // The stack pointer, roughly: the address of a local. (__builtin_frame_address would make
    // every coroutine that transfers keep a frame pointer: two instructions and one register
    // more per resumption.)
    char marker = 0;
    const auto here = reinterpret_cast<std::uintptr_t>(&marker);
    if (m_stack_base - here < k_max_transfer_stack) return next;
    m_bounced = next;
    return std::noop_coroutine();
  }
  /// @brief Owner only: what to resume after the current resume() returns (a frame that ended
  /// without suspending names its successor this way, see end_strand_inline).
  void set_next(std::coroutine_handle<> next) noexcept { m_bounced = next; }
  /// @brief Owner only: the frame to resume after the current resume() returns, if any.
  std::coroutine_handle<> take_bounced() noexcept { return std::exchange(m_bounced, nullptr); }
  /// @brief Owner only: records the stack depth of the worker loop (see transfer()).
  void set_stack_base(const void* base) noexcept {
    m_stack_base = reinterpret_cast<std::uintptr_t>(base);
  }

  static constexpr std::uintptr_t k_max_transfer_stack = 256 * 1024;
  static constexpr std::uint32_t k_transfers_per_check = 16;

  ws_deque m_deque; ///< owner pushes/pops, thieves steal
  /// Held by a thief from its take until the take is counted. On a line of its own: thieves
  /// write it, and the owner's hot fields (its counters) must not move with it.
  alignas(64) spin_lock m_steal_lock;
  alignas(64) worker_counters m_counters; ///< owner writes
  published_counters m_published;         ///< owner stores copies of m_counters; anyone reads
  frame_pool m_frames;                    ///< owner only: coroutine frames freed on this worker

private:
  /// Out of line: polls the network (if any) from a busy worker; resets the countdown.
  void busy_poll() noexcept;

  scheduler* m_sched;
  std::uint32_t m_pushes_until_poll = k_busy_poll_pushes; ///< owner only
  unsigned m_index;
  std::uint64_t m_rng;
  std::uintptr_t m_stack_base = 0;                               ///< owner only
  std::uint32_t m_transfers_until_check = k_transfers_per_check; ///< owner only
  finish_state* m_deferred_end = nullptr; ///< owner only: the proxy of m_deferred_ends
  std::uint64_t m_deferred_ends = 0;      ///< owner only: its strands that ended, not yet applied
  std::coroutine_handle<> m_bounced;      ///< owner only
};

/// @brief The worker running on this thread, or null on a non-worker thread.
inline thread_local worker* t_worker = nullptr;

/// @brief The default policy of new finishes (set by the runtime before workers start).
inline policy g_default_policy = policy::work_first;
/// @brief options::adaptive_bound (set by the runtime before workers start): enough items to
/// feed every thief of a place for a while, few enough that the frames a flat loop holds stay
/// a constant.
inline std::int64_t g_adaptive_bound = 64;

/// @brief Whether an adaptive spawn by `parent` runs the child at once (work-first).
///
/// Help-first only below the deque bound, and only from a strand with no parent continuation
/// (a finish body, a help-first child, a stolen continuation): a work-first child's parent
/// continuation may lie at the bottom of our deque, where the child's end looks for it (see
/// end_strand_inline), and a counted child pushed above it would be popped there instead. (A
/// frame awaited in sequence might run inside such a child: it goes work-first too.) A frame
/// whose spawns go work-first once keeps its children work-first: the deque bounds the
/// unstarted children a worker holds, and work-first needs no space beyond the sequential
/// run's per worker.
[[gnu::always_inline]] inline bool adaptive_runs_child_first(const promise_base& parent,
                                                             worker& w) noexcept {
  if (parent.m_role == promise_base::role::call || parent.m_parent != nullptr) return true;
  return w.m_deque.size_estimate() >= g_adaptive_bound;
}

/// @brief Starts `child` as an activity of the parent's current finish. Returns the frame to
/// run now (the child under work-first, the parent under help-first).
[[gnu::always_inline]] inline std::coroutine_handle<> spawn(promise_base& parent,
                                                            promise_base& child) {
  finish_state* f = parent.m_finish;
  child.m_finish = f;
  child.m_role = promise_base::role::strand;
  worker& w = *t_worker;
  ++w.m_counters.spawns;
  if (f->m_policy == policy::work_first ||
      (f->m_policy == policy::adaptive && adaptive_runs_child_first(parent, w))) {
    child.m_parent = &parent;
    w.push(as_continuation(&parent));
    return w.transfer(child.m_self);
  }
  // relaxed: the parent is a live strand of f, so the count cannot reach zero concurrently;
  // the deque push (release) orders this increment before the child's decrement.
  f->m_count.fetch_add(1, std::memory_order_relaxed);
  child.m_parent = nullptr;
  w.push(as_fresh_strand(&child));
  return w.transfer(parent.m_self); // resuming ourselves nests too when not a tail call
}

/// @brief "Nothing popped yet" for the two halves of a strand's end below (never a deque item:
/// items are aligned pointers).
inline constexpr deque_item k_not_popped = ~deque_item{0};

/// @brief The end of an activity's frame (role::strand), first half, run before the frame is
/// destroyed: handles the three common endings without publishing anything to other threads.
///  - The strand joins its parent implicitly: the parent's continuation is still at the
///    bottom of our deque.
///  - The strand has no parent continuation (a finish body, a help-first child, the last task
///    of a finish_all) and is the last of its finish, which has a waiter: the deque is left
///    alone, so that the waiter can still join its own parent implicitly when it ends (see
///    release_strand for why a count equal to the strand's units seen here is final).
///  - The strand has no parent continuation and pops a fresh help-first strand of its finish
///    (see as_fresh_strand): it hands its count over to that strand (see the top of
///    activity.hpp). Only to such a strand: the outermost frame of a strand (a role::call
///    frame's end is no strand's end) without a parent continuation (whose end would join
///    it implicitly: the units would have to follow) that carries nothing yet (one unit, its
///    own: the sum fits in the byte unless we carry the most already).
///    Not for a proxy (the places layer counts its ends, see worker::end_strand).
/// Then it sets what the worker runs next and returns true: the frame is destroyed when the
/// caller returns, before that next frame runs. Otherwise returns false, with what it popped
/// (or k_not_popped) in `popped`, for finish_strand.
[[gnu::always_inline]] inline bool end_strand_inline(promise_base& p, deque_item& popped) noexcept {
  finish_state* f = p.m_finish;
  promise_base* parent = p.m_parent;
  worker& w = *t_worker;
  // `popped` is written only where we return false (it lives in the frame: a store saved on
  // the paths that do not suspend).
  if (parent != nullptr) {
    const deque_item item = w.m_deque.pop();
    if (item != as_continuation(parent)) {
      popped = item;
      return false;
    }
    w.set_next(parent->m_self);
    return true;
  }
  // The proxy test second: a strand that is not the last (the first task of a help-first
  // finish_all to end) skips it. (is_last_strand's answer for a proxy is just ignored.)
  if (f->is_last_strand(p) && !f->m_reopenable) {
    // A root finish (no waiter) completes after the frame is gone: its waiter is another
    // thread, which may tear everything down as soon as it sees the completion.
    if (f->m_waiter == nullptr) return false;
    w.set_next(f->m_waiter->m_self);
    return true;
  }
  const deque_item item = w.m_deque.pop();
  const std::uint32_t units = p.strand_units();
  if (!is_fresh_strand(item) || f->m_reopenable || fresh_strand_of(item)->m_finish != f ||
      units >= promise_base::k_max_strand_units) {
    popped = item;
    return false;
  }
  promise_base* next = fresh_strand_of(item);
  // The popped strand is ours alone now (we took it from our deque): a plain write.
  next->set_strand_units(units + 1);
  w.set_next(next->m_self);
  return true;
}

/// @brief The end of an activity's frame, second half, when end_strand_inline returned false:
/// destroys the frame, then completes a root finish or ends the strand (which may publish the
/// end to other threads, so the frame must be gone first). Returns what this worker runs next.
inline std::coroutine_handle<> finish_strand(promise_base& p, deque_item popped) noexcept {
  finish_state* f = p.m_finish;
  const bool was_work_first_child = p.m_parent != nullptr;
  const std::uint32_t units = p.strand_units();
  worker& w = *t_worker;
  p.m_self.destroy();
  if (popped == k_not_popped)
    return w.transfer(f->on_complete()); // the last strand of a root finish
  return w.transfer(w.end_strand(f, popped, was_work_first_child, units));
}

} // namespace apgas::detail
