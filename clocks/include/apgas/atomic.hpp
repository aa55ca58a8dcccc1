/// @file atomic and when: X10's atomic blocks and conditional atomic blocks.
///
///     co_await apgas::atomic([&] { ++count; });             // as if in one step
///     int v = co_await apgas::when([&] { return !buf.empty(); },
///                                  [&] { return buf.take(); }); // once the condition holds
///
/// An atomic block runs as if in one step with respect to every other atomic block and `when`
/// body of its place (one lock per place). A `when` waits, without holding a worker, until its
/// condition holds, then runs its body in the same step as the test that found it true. The
/// condition is tested again each time an atomic block or `when` body of the place ends, so
/// it must read only state that such blocks change.
///
/// The condition and the body are plain callables: they must not suspend (a callable that
/// returns an apgas::task is refused at compile time). An `atomic` inside them runs at once,
/// as part of the enclosing block (X10's nested atomic, written without co_await there); a
/// `when` inside them throws std::logic_error (it would wait holding the lock), and so do
/// clock operations (apgas::clock_use_exception).
/// A `when` body, or a condition, may run on another worker of the place: the one whose
/// atomic block made the condition true. An exception thrown by either comes out of the
/// co_await, in the awaiting activity, and from there reaches its finish; the lock is free.
#pragma once

#include "apgas/task.hpp"

#include <source_location>

namespace apgas {

/// @brief `atomic S`: runs f() as if in one step with respect to every other atomic block and
/// `when` body of this place, and gives its value back. Never suspends; waits for the lock
/// if another worker holds it. f must not suspend. Returns an awaitable of f's value.
template <class F>
APGAS_AWAIT_IT auto atomic(F&& f);

/// @brief `when (cond) S`: once cond() holds, runs f() in the same atomic step as that test
/// and gives its value back. Until then the activity is suspended (its worker runs other
/// work) in this place's queue, and cond() is tested again whenever an atomic block or `when`
/// body of this place ends. Neither cond nor f may suspend. `site` names the call in the
/// place's state dump (SIGUSR1). Returns an awaitable of f's value.
template <class C, class F>
APGAS_AWAIT_IT auto when(C&& cond, F&& f,
                         std::source_location site = std::source_location::current());

} // namespace apgas

#include "apgas/detail/atomic_awaiters.hpp"
