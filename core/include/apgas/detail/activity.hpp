// The state every activity's coroutine frame carries (promise_base) and the state of a finish.
//
// Counting scheme (lazy, after Tardieu et al., PPoPP'12): a finish counts *strands*, not
// activities. A strand is a chain of work that one worker runs in sequence: under work-first,
// a child and its parent's continuation form one strand as long as nobody takes the
// continuation, so a spawn whose continuation is not stolen costs no atomic operation. A
// strand splits when its continuation is taken by someone else than the child that pushed it
// (a thief, or the owner after the child suspended or ended elsewhere): whoever takes it adds
// one to the count. Help-first children are counted when pushed. A finish body starts as one
// strand. The finish completes when the count drops to zero; increments always happen before
// the decrement that could otherwise reach zero (see worker::end_strand and worker::steal).
//
// Why an ending child can trust what it pops: in a work-first finish every item pushed is a
// continuation, in a help-first finish every item pushed is already counted, and a nested
// finish consumes all of its items before its waiter goes on. So a child's parent
// continuation is either at the bottom of its worker's deque or was taken (and counted), and
// thieves take the oldest items first.
//
// Handing a count over (help-first's counterpart of the implicit join): a strand without a
// parent continuation that ends and pops a fresh help-first strand of its own finish (the
// next task of a help-first finish_all, a help-first child: counted, and without a parent
// continuation either) does not decrement the count: the popped strand takes its unit over
// and gives it back at its own end, together with its own (promise_base::m_role counts
// them). The count then exceeds the number of live strands by the units they carry, never
// falls below it, so the finish cannot complete early; and a strand that is ending and finds
// the count equal to its units is the last (is_last_strand). So a help-first finish_all
// whose tasks are not stolen costs no atomic read-modify-write either.
#pragma once

#include "apgas/detail/spin_lock.hpp"
#include "apgas/options.hpp"

#include <atomic>
#include <coroutine>
#include <cstdint>
#include <exception>
#include <vector>

namespace apgas::detail {

struct finish_state;
struct promise_base;

/// @brief What the places layer does for finishes that left their place (set once by the
/// places runtime; core never calls them for a finish whose m_remote is null). Global rather
/// than per finish: every finish would otherwise carry (and initialise) two more pointers.
struct remote_finish_hooks {
  /// Ends a strand of a reopenable finish (a proxy) in place of release_strand's decrement:
  /// the places layer decrements under the proxy's own lock, the one arrivals take to raise
  /// the count from zero, so that a count of zero and its report are decided in one step.
  /// `n` strands end at once: a worker that ends several activities of one proxy in a row
  /// applies their ends together (see worker::end_strand).
  void (*end_proxy_strands)(finish_state&, std::uint64_t n) noexcept = nullptr;
  /// Frees the distributed state of a home finish when the finish is destroyed.
  void (*release_remote)(finish_state&) noexcept = nullptr;
  /// The last local strand of a home finish whose remote part is open is ending (called
  /// before its end is counted, so the finish is still alive): only other places can still
  /// end the finish, and the places layer asks them for the reports they hold.
  void (*home_quiet)(finish_state&) noexcept = nullptr;
};
inline remote_finish_hooks g_remote_hooks;

/// @brief What a frame awaited in sequence (role::call) needs from its caller: whom to resume
/// at its end and where an escaping exception goes. Lives in the caller's awaiter, in the
/// caller's frame, so that the many frames that are activities do not carry it.
struct call_link {
  promise_base* caller;     ///< the caller's frame
  std::exception_ptr error; ///< an exception that escaped the callee (rethrown to the caller)
};

/// @brief Fields shared by every apgas coroutine promise. Written by the thread that runs the
/// frame; read by a thief only after it acquired the frame through the deque.
struct promise_base {
  /// Any value above role::strand is a strand too: see m_role.
  enum class role : std::uint8_t {
    call = 0,   ///< awaited in sequence by its caller (`co_await t`)
    strand = 1, ///< an activity of its own: an async, a finish body, or the root
  };
  /// The most units a strand carries (see m_role): what its byte holds.
  static constexpr std::uint32_t k_max_strand_units = 255;

  // No default initialisers: whoever starts a frame (call_awaiter, spawn, finish, finish_all,
  // the root, the places layer) sets the fields its role uses, and a frame destroyed without
  // running reads none of them. Initialising them anyway costs a few stores per task, a few
  // percent of a fine-grained spawn.
  std::coroutine_handle<> m_self; ///< this frame (set at creation)
  finish_state* m_finish;         ///< where asyncs started by this frame are counted
  union {
    promise_base* m_parent; ///< role::strand, work-first: the parent whose continuation was pushed
    call_link* m_call;      ///< role::call: the caller, and where an exception goes
  };
  /// role::call, or for a strand its units: how many strand ends its own end accounts for
  /// in its finish's count, its own (role::strand is one) plus those handed over to it (see
  /// the top of this file). In the role's byte, not a field of its own, so that whoever
  /// starts a strand (here or in the places layer) initialises them by writing
  /// role::strand; tests for the role compare with role::call.
  role m_role;

  std::uint32_t strand_units() const noexcept { return static_cast<std::uint8_t>(m_role); }
  void set_strand_units(std::uint32_t units) noexcept {
    m_role = static_cast<role>(static_cast<std::uint8_t>(units));
  }
};

/// @brief A deque item is a promise pointer with two tag bits. Bit 0: a continuation that
/// may still be joined implicitly by the child that pushed it (not counted yet). Bit 1: a
/// fresh help-first strand (a child or task that has not started: role::strand with one
/// unit, no parent continuation, counted), whose count an ending strand of its finish that
/// pops it may hand over to it without looking at its frame (see end_strand_inline). An
/// item with neither is counted.
using deque_item = std::uintptr_t;
static_assert(alignof(promise_base) >= 4, "deque items keep two tag bits in the pointer");
inline deque_item as_continuation(promise_base* p) noexcept {
  return reinterpret_cast<deque_item>(p) | 1U;
}
inline deque_item as_independent(promise_base* p) noexcept {
  return reinterpret_cast<deque_item>(p);
}
inline deque_item as_fresh_strand(promise_base* p) noexcept {
  return reinterpret_cast<deque_item>(p) | 2U;
}
inline deque_item make_independent(deque_item item) noexcept { return item & ~deque_item{1}; }
inline bool is_continuation(deque_item item) noexcept { return (item & 1U) != 0; }
inline bool is_fresh_strand(deque_item item) noexcept {
  // (item & 3) == 2, written with the item - 2 that fresh_strand_of computes: one register.
  return ((item - 2U) & 3U) == 0;
}
inline promise_base* promise_of(deque_item item) noexcept {
  return reinterpret_cast<promise_base*>(item & ~deque_item{3});
}
/// pre: is_fresh_strand(item). (A subtraction, which the compiler folds into the offsets of
/// the frame's fields, where promise_of's mask costs an instruction.)
inline promise_base* fresh_strand_of(deque_item item) noexcept {
  return reinterpret_cast<promise_base*>(item - 2U);
}

/// @brief The state of one finish: a count of live strands, the continuation to resume when
/// it reaches zero, and the exceptions gathered meanwhile.
struct finish_state {
  [[gnu::always_inline]] explicit finish_state(policy p) noexcept : m_policy(p) {}
  finish_state(const finish_state&) = delete;
  finish_state& operator=(const finish_state&) = delete;
  [[gnu::always_inline]] ~finish_state() {
    // One test for the two rare cases (a finish that went remote, or that gathered errors).
    if ((reinterpret_cast<std::uintptr_t>(m_remote) |
         reinterpret_cast<std::uintptr_t>(m_exceptions)) != 0) [[unlikely]]
      release_extras();
  }

  /// Live strands. Starts at one for the body. 64-bit so that it can never wrap. The remote
  /// part of a home finish, while open, counts k_remote_part (see release_strand).
  std::atomic<std::int64_t> m_count{1};
  /// What an open remote part adds to m_count: more than any number of local strands, so
  /// that the count tells whether the part is open and how many local strands are left.
  static constexpr std::int64_t k_remote_part = std::int64_t{1} << 40;
  /// Resumed by whoever takes m_count to zero; null for a root finish (then m_done is set).
  promise_base* m_waiter = nullptr;
  /// The body of a `finish` (a strand that is part of the activity awaiting the finish, see
  /// activity_of); null for the other finishes.
  const promise_base* m_body = nullptr;
  policy m_policy;
  // The four one-byte fields below start at zero and follow each other, which lets the
  // compiler clear them with one store.
  /// Root finish only: set (release) when complete; a non-worker thread waits on it.
  std::atomic<bool> m_done{false};
  /// A place-local proxy of a remote finish: its count also goes up from outside (activities
  /// arriving from other places), so a count of one is not final (no fast path), and it has
  /// no waiter: it reports home each time its count reaches zero, possibly many times (see
  /// remote_finish_hooks::end_proxy_strands).
  bool m_reopenable = false;
  /// What the program promised about this finish's remote activities (see finish_pattern).
  finish_pattern m_pattern = finish_pattern::general;
  spin_lock m_exceptions_lock; ///< guards m_exceptions (next to the flags: a smaller frame)
  /// The places layer's state for a finish whose activities went to other places (opaque to
  /// core; null for a finish that never left its place).
  /// For a home finish, g_remote_hooks.release_remote frees it when the finish is destroyed.
  void* m_remote = nullptr;
  /// Exceptions gathered; allocated on the first one, so that a finish that does not fail
  /// costs one null pointer. Owned (freed by discard_exceptions). Not a unique_ptr: every
  /// finish runs its destructor, and GCC leaves unique_ptr's out of line in large translation
  /// units, a call per finish.
  std::vector<std::exception_ptr>* m_exceptions = nullptr;

  /// @brief True if `ending`, a strand of this finish that is ending, is the last one (see
  /// release_strand): if the count holds its units only (see promise_base::m_role).
  /// Meaningless for a proxy (its count also rises from outside: no count is final): the
  /// caller tests m_reopenable too.
  [[gnu::always_inline]] bool is_last_strand(const promise_base& ending) const noexcept {
    // acquire: see the writes of the strands that ended before us.
    const std::int64_t count = m_count.load(std::memory_order_acquire);
    // The units are read after the load, where GCC compares with the byte loaded afresh
    // rather than with a widened copy of the role it tested before (an instruction more).
    return count == ending.strand_units();
  }

  /// @brief Ends a strand that carries `units`; true if it was the last (the caller then
  /// completes the finish).
  bool release_strand(std::uint32_t units) noexcept {
    if (m_reopenable) [[unlikely]] { // a proxy: the places layer handles a count of zero
      g_remote_hooks.end_proxy_strands(*this, units);
      return false;
    }
    // Fast path: a count equal to the units of a strand that is ending means it is the last
    // one. Every increment of the count is made by a live strand of this finish (a thief or
    // owner taking one of its continuations, a help-first push, a remote spawn), and each such
    // increment is ordered before the ending strand's load through that strand's own history
    // (the steal lock, or program order), so the count read here cannot be stale; the units
    // it carries beyond its own are ends of strands that ran on this worker before it, whose
    // counting is in its history too. acquire: see the writes of the strands that ended
    // before us.
    const auto n = static_cast<std::int64_t>(units);
    std::int64_t count = m_count.load(std::memory_order_acquire);
    if (count == n) return true;
    // A compare-exchange rather than a fetch_sub: the strand that leaves only an open remote
    // part (count k_remote_part + its units) tells the places layer before its end is
    // counted, while the finish cannot complete. Decided on the value it replaces, so two
    // strands ending at once cannot both miss it. acq_rel: release our strand's writes to
    // whoever completes the finish; acquire the others' if we are the one who completes it
    // (and, for the hook, the remote part's opening, see open_remote_part).
    for (;;) {
      if (count == k_remote_part + n) [[unlikely]]
        g_remote_hooks.home_quiet(*this);
      if (m_count.compare_exchange_weak(count, count - n, std::memory_order_acq_rel,
                                        std::memory_order_acquire))
        return count == n;
    }
  }

  /// @brief The remote part (see k_remote_part) opens: called by a live strand of this finish.
  void open_remote_part() noexcept {
    // release: whoever reads the count with the part in it (release_strand's hook) sees
    // what the opening strand did before, the finish's link to other places included.
    m_count.fetch_add(k_remote_part, std::memory_order_release);
  }
  /// @brief The remote part closes; true if that ends the finish (as release_strand).
  bool release_remote_part() noexcept {
    // acq_rel: as release_strand.
    return m_count.fetch_sub(k_remote_part, std::memory_order_acq_rel) == k_remote_part;
  }

  /// @brief Records an exception that escaped an activity of this finish. Any thread.
  void add_exception(std::exception_ptr e) noexcept;
  /// @brief Called once, by whoever took the count to zero: what to run next.
  std::coroutine_handle<> on_complete() noexcept {
    if (m_waiter != nullptr) [[likely]]
      return m_waiter->m_self;
    return complete_root();
  }
  /// @brief The destructor's rare part: frees the distributed state of a home finish and the
  /// exceptions gathered.
  void release_extras() noexcept;
  /// @brief Frees the exceptions gathered, if any. Whoever holds them: m_exceptions_lock, or
  /// the only reference to the finish.
  void discard_exceptions() noexcept;
  /// @brief Throws multiple_exceptions if any were gathered (called by the waiter).
  [[gnu::always_inline]] void rethrow_if_failed() {
    // No lock needed: every activity has ended (their decrements released to our acquire).
    if (m_exceptions) [[unlikely]]
      throw_gathered();
  }

private:
  std::coroutine_handle<> complete_root() noexcept;
  [[noreturn]] void throw_gathered();
};

/// @brief The activity a frame runs in, as X10 sees it: the frame that started it (a strand),
/// looked up through frames awaited in sequence and through finish bodies (a finish's body is
/// part of the activity that awaits the finish). Used to check that a clock is used by the
/// activity registered on it. pre: `p` is running or suspended in an await.
inline const promise_base& activity_of(const promise_base& p) noexcept {
  const promise_base* q = &p;
  for (;;) {
    while (q->m_role == promise_base::role::call) q = q->m_call->caller;
    const finish_state* f = q->m_finish;
    if (f == nullptr || f->m_body != q || f->m_waiter == nullptr) return *q;
    q = f->m_waiter;
  }
}

} // namespace apgas::detail
