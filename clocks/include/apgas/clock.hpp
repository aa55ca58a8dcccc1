/// @file Clocks: lock-step phases across activities and places (X10's clocks, with uClocks'
/// implementation properties and Habanero's phaser accumulators).
///
///     co_await apgas::finish([&]() -> task<> {
///       apgas::clock c = co_await apgas::clock::make();      // registers this activity
///       for (int i = 0; i < n; ++i)
///         co_await apgas::async(apgas::clocked(c), [i](apgas::clock c) -> task<> {
///           for (int step = 0; step < steps; ++step) {
///             work(i, step);
///             double most = co_await c.advance(apgas::max, change(i)); // phase ends here
///             if (most < 1e-9) break;
///           }
///         });                                               // c is dropped as it ends
///     });                                                   // the maker's c drops here too
///
/// A `clock` object is one activity's registration on a clock: move-only, and destroying it
/// drops the registration (an activity that ends drops its clocks). `clocked(c)` registers a new
/// activity on c, before the parent can leave its current phase, and hands the new activity its
/// own registration as its first argument(s); `async_at(p, clocked(c), f, args...)` does the
/// same at another place. `advance()` ends the activity's phase and suspends it (its worker runs
/// other work) until every activity registered on the clock, at every place, has ended the same
/// phase. Misuse throws apgas::clock_use_exception.
#pragma once

#include "apgas/clock_reduce.hpp"
#include "apgas/finish.hpp"
#include "apgas/place.hpp"
#include "apgas/task.hpp"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace apgas {

/// @brief Misuse of a clock: an operation on a dropped clock, transmitting a dropped or resumed
/// clock to a new activity, a clocked async spawned inside a finish nested in the registered
/// activity (it would deadlock), a phase's reductions that disagree. The message names the case.
class clock_use_exception : public std::logic_error {
public:
  explicit clock_use_exception(const std::string& what) : std::logic_error(what) {}
};

/// @brief How an advance waits for the end of the phase. `lazy`: the activity suspends at once
/// and is woken once, when the phase ends (best when activities outnumber workers, or phases
/// are uneven). `eager`: it first keeps its worker for a short while re-checking the phase (and
/// polling the network), and suspends only if the phase has not ended by then (best for short,
/// balanced phases with at most one activity per worker). Both give the same results.
enum class signal : std::uint8_t { lazy, eager };

namespace detail {
class clock_proxy;
struct clock_token;
struct clock_waiter;
template <class... Clocks>
struct clocked_spawn;
template <class T>
class advance_awaiter;
template <class F, class Clocks, class... A>
class clocked_async_at_awaiter;
class make_clock_awaiter;
class adopt_clock_awaiter;
} // namespace detail

/// @brief One activity's registration on a clock. Thread-safety: one activity uses it.
class clock {
public:
  /// @brief A new clock with the awaiting activity registered on it:
  /// `apgas::clock c = co_await apgas::clock::make();`. `s` is its advances' default wait.
  [[nodiscard]] static detail::make_clock_awaiter make(signal s = signal::lazy);

  /// @brief No registration (a dropped clock).
  clock() noexcept = default;
  clock(clock&& other) noexcept;
  clock& operator=(clock&& other) noexcept;
  clock(const clock&) = delete;
  clock& operator=(const clock&) = delete;
  /// Drops the registration, if any.
  ~clock();

  /// @brief Ends this activity's part of the current phase without waiting (a later advance()
  /// then waits only for the others). A second resume in the same phase does nothing.
  /// @throws clock_use_exception if dropped.
  void resume();
  /// @brief Ends this activity's phase (resuming first if needed) and waits until every
  /// registered activity has ended it. @throws clock_use_exception if dropped.
  [[nodiscard]] detail::advance_awaiter<void> advance();
  /// @brief advance() with wait policy `s` for this call.
  [[nodiscard]] detail::advance_awaiter<void> advance(signal s);
  /// @brief advance() that contributes `value` to the phase's reduction by `op` and returns its
  /// result: `op` folded over the contributions of every activity that contributed in this
  /// phase, at every place (every contributor gets the same value). `op` is a stateless
  /// associative function object (apgas::sum, apgas::min, apgas::max, or your own); T is a
  /// bitwise type of at most detail::k_max_reduce_bytes. All contributions of a phase must use
  /// the same op and type.
  template <class Op, class T>
  [[nodiscard]] detail::advance_awaiter<T> advance(Op op, T value, signal s);
  template <class Op, class T>
  [[nodiscard]] detail::advance_awaiter<T> advance(Op op, T value) {
    return advance(op, value, m_signal);
  }
  /// @brief Deregisters this activity: the clock no longer waits for it. Idempotent.
  void drop() noexcept;

  /// @brief True while registered (not dropped).
  bool registered() const noexcept { return m_proxy != nullptr; }
  /// @brief The phase this activity is in (phases count from 1).
  std::uint64_t phase() const noexcept;

private:
  friend class detail::make_clock_awaiter;
  friend class detail::adopt_clock_awaiter;
  template <class... Clocks>
  friend struct detail::clocked_spawn;
  template <class T>
  friend class detail::advance_awaiter;
  template <class F, class Clocks, class... A>
  friend class detail::clocked_async_at_awaiter;

  /// The registration of a new activity on this clock, from `spawner` (the parent's finish,
  /// which will govern the child). pre: the calling activity holds this registration.
  clock register_child(const detail::finish_state* spawner);
  /// The same for an activity that starts at place `to`: counted here, adopted there.
  detail::clock_token register_remote_child(const detail::finish_state* spawner, place_id to);
  /// Undoes register_remote_child when the activity could not be sent.
  void unregister_remote_child(place_id to) noexcept;
  void check_registered(const char* operation) const;
  /// advance's steps: resumes (with the contribution, if any) and says whether the phase has
  /// ended (after an eager wait, if asked); queues the waiting activity; moves the registration
  /// into the next phase once it has ended, copying out the reduction's result.
  bool begin_advance(const detail::reduce_contribution* c, signal s);
  std::coroutine_handle<> suspend_advance(detail::clock_waiter& w);
  void end_advance(void* result, std::size_t size);

  detail::clock_proxy* m_proxy = nullptr; ///< counted reference; null: dropped
  std::uint64_t m_phase = 0;              ///< the phase this activity is in
  bool m_resumed = false;                 ///< it resumed in m_phase
  signal m_signal = signal::lazy;         ///< advances' default wait
  /// The finish that governs the registered activity: a clocked async from inside a finish
  /// nested in the activity would deadlock (the finish waits for the child, the child for the
  /// activity's next phase).
  const detail::finish_state* m_finish = nullptr;
};

/// @brief Registers a new activity on the given clocks: `co_await apgas::async(apgas::clocked(c),
/// body)` calls body(child registration(s)...), `co_await apgas::async_at(p, apgas::clocked(c),
/// f, args...)` calls f(child registration(s)..., args...) at p.
template <class... Clocks>
requires(sizeof...(Clocks) >= 1 && (std::is_same_v<Clocks, clock> && ...))
    [[nodiscard]] detail::clocked_spawn<Clocks...> clocked(Clocks&... clocks) {
  return detail::clocked_spawn<Clocks...>{{&clocks...}};
}

} // namespace apgas

#include "apgas/detail/clock_awaiters.hpp"
