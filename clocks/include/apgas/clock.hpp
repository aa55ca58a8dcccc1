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
/// phase; the activity is then in the next one. The rules are X10's (docs/reference/clocks.md lists
/// them with their tests). Misuse throws apgas::clock_use_exception.
#pragma once

#include "apgas/clock_reduce.hpp"
#include "apgas/finish.hpp"
#include "apgas/place.hpp"
#include "apgas/task.hpp"

#include <array>
#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace apgas {

/// @brief Misuse of a clock: an operation on a clock the activity is not registered on
/// (dropped, or another activity's registration), a clock operation inside an atomic block or
/// `when`, transmitting a resumed clock to another place, a clocked async spawned inside a
/// finish nested in the registered activity (it would deadlock), a phase's reductions that
/// disagree. The message names the case.
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

class clock;
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
template <class Body, class... Clocks>
class clocked_async_awaiter;
class make_clock_awaiter;
class adopt_clock_awaiter;
template <class Body, class... Regs>
task<> run_clocked(Body body, Regs... regs);
template <class F, std::size_t N>
struct clocked_remote;
/// An advance's first step (clock.cpp): true if `frame` goes on at once (its phase has ended,
/// or the advance is a misuse, kept in `error` for await_resume).
bool start_advance(clock& c, const promise_base& frame, const reduce_contribution* contribution,
                   signal s, std::exception_ptr& error) noexcept;
} // namespace detail

/// @brief One activity's registration on a clock (X10's clock, as the activity holding it sees
/// it: a phase, and whether it has resumed in it). Thread-safety: one activity uses it; using
/// it from another activity (a plain async handed a reference, say) throws
/// clock_use_exception at advance() and at clocked spawns.
class clock {
public:
  /// @brief A new clock with the awaiting activity registered on it, in phase 1:
  /// `apgas::clock c = co_await apgas::clock::make();`. `s` is its advances' default wait.
  APGAS_AWAIT_IT static detail::make_clock_awaiter make(signal s = signal::lazy);
  /// @brief A new clock whose first phase is `first_phase` (1 to 2^63): a program resumed
  /// from a checkpoint taken after phase t goes on with `make(s, t + 1)`, so that phase()
  /// numbers its phases as the interrupted run did. @throws clock_use_exception (at the
  /// co_await) if `first_phase` is 0 or above 2^63.
  APGAS_AWAIT_IT static detail::make_clock_awaiter make(signal s, std::uint64_t first_phase);

  /// @brief No registration (a dropped clock).
  clock() noexcept = default;
  clock(clock&& other) noexcept;
  clock& operator=(clock&& other) noexcept;
  clock(const clock&) = delete;
  clock& operator=(const clock&) = delete;
  /// Drops the registration, if any.
  ~clock();

  /// @brief Ends this activity's part of the current phase without waiting (X10's resume):
  /// the phase can end without it, and a later advance() waits only for the others. A second
  /// resume in the same phase does nothing. The activity stays in its phase until it
  /// advances. @throws clock_use_exception if dropped, or inside an atomic block or `when`.
  void resume();
  /// @brief Moves this activity to the next phase: resumes (if it has not in this phase), then
  /// waits until every activity registered on the clock, at every place, has resumed or
  /// dropped in this phase. Exactly one phase per advance. @throws clock_use_exception if
  /// dropped, or if another activity's registration.
  APGAS_AWAIT_IT detail::advance_awaiter<void> advance();
  /// @brief advance() with wait policy `s` for this call.
  APGAS_AWAIT_IT detail::advance_awaiter<void> advance(signal s);
  /// @brief advance() that contributes `value` to the phase's reduction by `op` and returns its
  /// result: `op` folded over the contributions of every activity that contributed in this
  /// phase, at every place (every contributor gets the same value). `op` is a stateless
  /// associative function object (apgas::sum, apgas::min, apgas::max, or your own); T is a
  /// bitwise type of at most detail::k_max_reduce_bytes. All contributions of a phase must use
  /// the same op and type; the contribution comes with the phase's resume, so an activity that
  /// resumed in this phase cannot contribute (clock_use_exception). If the contributions
  /// disagree, or `op` throws, every contributor of the phase gets the error at its advance
  /// (at every place), and the clock goes on with the next phase.
  template <class Op, class T>
  APGAS_AWAIT_IT detail::advance_awaiter<T> advance(Op op, T value, signal s);
  template <class Op, class T>
  APGAS_AWAIT_IT detail::advance_awaiter<T> advance(Op op, T value) {
    return advance(op, value, m_signal);
  }
  /// @brief Deregisters this activity: the clock no longer waits for it (X10's drop).
  /// @throws clock_use_exception if dropped already, or inside an atomic block or `when`.
  void drop();

  /// @brief True while registered (not dropped).
  bool registered() const noexcept { return m_proxy != nullptr; }
  /// @brief The phase this activity is in (phases count from 1; each advance adds one).
  /// @throws clock_use_exception if dropped.
  std::uint64_t phase() const;
  /// @brief True if this activity has resumed in its current phase.
  bool resumed() const noexcept { return m_resumed; }

private:
  friend class detail::make_clock_awaiter;
  friend class detail::adopt_clock_awaiter;
  template <class... Clocks>
  friend struct detail::clocked_spawn;
  template <class T>
  friend class detail::advance_awaiter;
  template <class F, class Clocks, class... A>
  friend class detail::clocked_async_at_awaiter;
  template <class Body, class... Regs>
  friend task<> detail::run_clocked(Body body, Regs... regs);
  template <class F, std::size_t N>
  friend struct detail::clocked_remote;
  friend bool detail::start_advance(clock& c, const detail::promise_base& frame,
                                    const detail::reduce_contribution* contribution, signal s,
                                    std::exception_ptr& error) noexcept;

  /// The registration of a new activity on this clock by `parent` (an activity's frame),
  /// from `spawner` (the parent's finish, which will govern the child). The child starts in
  /// the parent's phase, resumed if the parent has resumed (X10).
  clock register_child(const detail::promise_base& parent, const detail::finish_state* spawner);
  /// The same for an activity that starts at place `to`: counted here, adopted there.
  detail::clock_token register_remote_child(const detail::promise_base& parent,
                                            const detail::finish_state* spawner, place_id to);
  /// Undoes register_remote_child when the activity could not be sent.
  void unregister_remote_child(place_id to) noexcept;
  void check_registered(const char* operation) const;
  /// check_registered, and that the activity of `frame` holds this registration.
  void check_owner(const detail::promise_base& frame, const char* operation);
  /// The registration belongs to the activity of `frame` (a new activity's first frame).
  void bind_to(const detail::promise_base& frame) noexcept;
  /// advance's steps: resumes (with the contribution, if any) unless resumed already and says
  /// whether the phase has ended (after an eager wait, if asked); queues the waiting
  /// activity; moves the registration into the next phase once it has ended, copying out the
  /// reduction's result.
  bool begin_advance(const detail::promise_base& frame, const detail::reduce_contribution* c,
                     signal s);
  std::coroutine_handle<> suspend_advance(detail::clock_waiter& w);
  void end_advance(void* result, std::size_t size);
  /// Deregisters (the destructor's drop: never throws).
  void release_registration() noexcept;

  detail::clock_proxy* m_proxy = nullptr; ///< counted reference; null: dropped
  std::uint64_t m_phase = 0;              ///< the phase this activity is in
  bool m_resumed = false;                 ///< it resumed in m_phase
  signal m_signal = signal::lazy;         ///< advances' default wait
  /// The finish that governs the registered activity: a clocked async from inside a finish
  /// nested in the activity would deadlock (the finish waits for the child, the child for the
  /// activity's next phase).
  const detail::finish_state* m_finish = nullptr;
  /// The registered activity (see detail::activity_of); null until a new activity's
  /// registration is bound to it.
  /// Atomic (relaxed) with m_checked_frame: the misuse it detects is another activity reading
  /// them while the owner writes them; no other field is read before that activity throws.
  std::atomic<const detail::promise_base*> m_owner{nullptr};
  /// The last frame found to run in m_owner: an advance loop checks its activity once.
  std::atomic<const detail::promise_base*> m_checked_frame{nullptr};
};

/// @brief Registers a new activity on the given clocks: `co_await apgas::async(apgas::clocked(c),
/// body)` calls body(child registration(s)...), `co_await apgas::async_at(p, apgas::clocked(c),
/// f, args...)` calls f(child registration(s)..., args...) at p.
template <class... Clocks>
requires(sizeof...(Clocks) >= 1 && (std::is_same_v<Clocks, clock> && ...))
    [[nodiscard]] detail::clocked_spawn<Clocks...> clocked(Clocks&... clocks) {
  return detail::clocked_spawn<Clocks...>{{&clocks...}};
}

/// @brief Starts `body(registrations...)` as an activity registered on the clocks of
/// `clocked(c...)`, governed by the caller's finish. body takes one apgas::clock per clock (by
/// value to keep it, or by reference) and returns a task<> or nothing.
template <class... Clocks, class Body>
APGAS_AWAIT_IT detail::clocked_async_awaiter<std::decay_t<Body>, Clocks...>
async(detail::clocked_spawn<Clocks...> spawn, Body&& body);

/// @brief Starts f(registrations..., args...) at place p, registered on the clocks of
/// `clocked(c...)`, governed by the caller's finish. f captures nothing, or is a pointer to a
/// free or static member function (as for any async_at).
template <class... Clocks, class F, class... Args>
APGAS_AWAIT_IT detail::clocked_async_at_awaiter<F, detail::clocked_spawn<Clocks...>, Args...>
async_at(place_id p, detail::clocked_spawn<Clocks...> spawn, F f, Args&&... args);

/// @brief The clocked async_at of a pointer to a free or static member function (named at p by
/// its code offset, as async_at names it). @throws std::invalid_argument as async_at does.
template <class... Clocks, class R, class... P, bool NE, class... Args>
APGAS_AWAIT_IT
    detail::clocked_async_at_awaiter<detail::call_by_pointer<R (*)(P...) noexcept(NE)>,
                                     detail::clocked_spawn<Clocks...>,
                                     detail::function_handle<R (*)(P...) noexcept(NE)>, Args...>
    async_at(place_id p, detail::clocked_spawn<Clocks...> spawn, R (*f)(P...) noexcept(NE),
             Args&&... args);

/// @brief Ends the current phase of every given clock, then waits until each has ended: X10's
/// advanceAll over the activity's clocks (each moves exactly one phase; deadlock-free whatever
/// the order of the clocks, since every clock is resumed before any wait).
template <class... Clocks>
requires((std::is_same_v<Clocks, clock> && ...)) task<> advance_all(Clocks&... clocks);

/// @brief X10's `clocked finish`: a finish whose body is registered on a new clock, given to it
/// as body(clock&). Clocked asyncs of the body register on it; the body's registration drops
/// when the body ends (the finish then waits for the clocked activities without holding their
/// phases back).
template <class Body>
APGAS_AWAIT_IT task<> clocked_finish(Body body, signal s = signal::lazy);

} // namespace apgas

#include "apgas/detail/clock_awaiters.hpp"
