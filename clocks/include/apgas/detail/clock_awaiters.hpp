// The awaitables of <apgas/clock.hpp>: making a clock, advancing it, and starting clocked
// activities here and at other places; and the definitions of the functions clock.hpp declares.
// Included at the end of clock.hpp.
#pragma once

#include "apgas/clock.hpp"
#include "apgas/detail/code_registry.hpp"
#include "apgas/detail/trace.hpp"

#include <array>
#include <coroutine>
#include <cstring>
#include <exception>
#include <tuple>
#include <type_traits>
#include <utility>

namespace apgas::detail {

/// @brief Names a clock across places: its home and a serial number unique there.
struct clock_id {
  place_id home = 0;
  std::uint64_t serial = 0;
  friend bool operator==(const clock_id&, const clock_id&) = default;
};

/// @brief A registration sent to another place with its activity (bitwise: it travels as an
/// argument of the remote async). Only an activity that has not resumed in its phase sends
/// one: the new activity starts in that phase, not resumed.
struct clock_token {
  clock_id id;
  std::uint64_t phase = 0;       ///< the phase the new activity starts in
  std::uint64_t first_phase = 0; ///< the phase in which the clock first left its home
  signal default_signal = signal::lazy;
};

/// @brief An advance suspended until its phase ends (it lives in the advancing awaiter).
struct clock_waiter {
  clock_waiter* next = nullptr;
  promise_base* activity = nullptr;
  trace_wait wait; ///< begun before the waiter is published (clock::suspend_advance)
};

/// @brief co_await clock::make(): learns the maker's finish without suspending.
class make_clock_awaiter {
public:
  make_clock_awaiter(signal s, std::uint64_t first_phase) noexcept
      : m_signal(s), m_first_phase(first_phase) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> caller) noexcept {
    require_apgas_caller<P>();
    m_finish = caller.promise().m_finish;
    m_frame = &caller.promise();
    return false; // never suspends
  }
  clock await_resume();

private:
  signal m_signal;
  std::uint64_t m_first_phase;
  const finish_state* m_finish = nullptr;
  const promise_base* m_frame = nullptr;
};

/// @brief co_await adopt(token) at the place a clocked remote activity arrives.
class adopt_clock_awaiter {
public:
  explicit adopt_clock_awaiter(const clock_token& t) noexcept : m_token(t) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> caller) noexcept {
    require_apgas_caller<P>();
    m_finish = caller.promise().m_finish;
    m_frame = &caller.promise();
    return false;
  }
  clock await_resume();

private:
  clock_token m_token;
  const finish_state* m_finish = nullptr;
  const promise_base* m_frame = nullptr;
};

/// @brief co_await this_frame{}: the awaiting coroutine's own frame, without suspending.
struct this_frame {
  const promise_base* m_frame = nullptr;
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> caller) noexcept {
    require_apgas_caller<P>();
    m_frame = &caller.promise();
    return false;
  }
  const promise_base& await_resume() const noexcept { return *m_frame; }
};

/// @brief co_await c.advance(...): ends the activity's phase, then suspends until it has ended
/// everywhere (not at all if it already has). T is the reduction's type (void: none).
template <class T>
class APGAS_AWAIT_IT advance_awaiter {
public:
  advance_awaiter(clock& c, signal s, const reduce_contribution* contribution, const T* value)
      : m_clock(c), m_signal(s), m_has_value(contribution != nullptr) {
    if (m_has_value) {
      std::memcpy(&m_value, value, sizeof(T));
      m_contribution = *contribution;
      m_contribution.value = &m_value;
    }
  }
  advance_awaiter(const advance_awaiter&) = delete;
  advance_awaiter& operator=(const advance_awaiter&) = delete;

  // The work is done in await_suspend, which knows the advancing frame (whose activity must
  // hold the registration); a phase that has ended resumes the frame at once. A misuse is
  // kept for await_resume rather than thrown from await_suspend (a path compilers get wrong).
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    if (start_advance(m_clock, caller.promise(), m_has_value ? &m_contribution : nullptr, m_signal,
                      m_error))
      return t_worker->transfer(caller);
    m_waiter.activity = &caller.promise();
    return m_clock.suspend_advance(m_waiter);
  }
  T await_resume() {
    if (g_trace_on && m_waiter.wait.start_ns != 0) [[unlikely]] // it suspended
      m_waiter.wait.end(trace_kind::clock_wait, m_clock.phase());
    if (m_error) [[unlikely]]
      std::rethrow_exception(m_error);
    m_clock.end_advance(&m_value, sizeof(T));
    return m_value;
  }

private:
  clock& m_clock;
  signal m_signal;
  bool m_has_value;
  T m_value{};
  reduce_contribution m_contribution{};
  clock_waiter m_waiter;
  std::exception_ptr m_error;
};

template <>
class APGAS_AWAIT_IT advance_awaiter<void> {
public:
  advance_awaiter(clock& c, signal s) : m_clock(c), m_signal(s) {}
  advance_awaiter(const advance_awaiter&) = delete;
  advance_awaiter& operator=(const advance_awaiter&) = delete;

  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    if (start_advance(m_clock, caller.promise(), nullptr, m_signal, m_error))
      return t_worker->transfer(caller);
    m_waiter.activity = &caller.promise();
    return m_clock.suspend_advance(m_waiter);
  }
  void await_resume() {
    if (g_trace_on && m_waiter.wait.start_ns != 0) [[unlikely]] // it suspended
      m_waiter.wait.end(trace_kind::clock_wait, m_clock.phase());
    if (m_error) [[unlikely]]
      std::rethrow_exception(m_error);
    m_clock.end_advance(nullptr, 0);
  }

private:
  clock& m_clock;
  signal m_signal;
  clock_waiter m_waiter;
  std::exception_ptr m_error;
};

/// @brief The body of a clocked activity: holds its registrations for as long as it runs (so
/// they drop when it ends, whatever way it ends) and calls body(registrations...).
template <class Body, class... Regs>
task<> run_clocked(Body body, Regs... regs) {
  const promise_base& self = co_await this_frame{};
  (regs.bind_to(self), ...);
  if constexpr (is_task_v<std::invoke_result_t<Body&, Regs&&...>>)
    co_await body(std::move(regs)...);
  else body(std::move(regs)...);
}

/// @brief What clocked(c...) gives: the clocks to register a new activity on.
template <class... Clocks>
struct clocked_spawn {
  std::array<clock*, sizeof...(Clocks)> clocks;
  static constexpr std::size_t k_count = sizeof...(Clocks);

  /// The registrations of a new activity here, spawned by `parent` from finish `spawner`.
  auto register_children(const promise_base& parent, const finish_state* spawner) const {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::tuple<std::conditional_t<true, clock, Clocks>...>{
          clocks[I]->register_child(parent, spawner)...};
    }
    (std::index_sequence_for<Clocks...>{});
  }
};

/// @brief co_await async(clocked(c...), body): registers the child, then spawns it.
template <class Body, class... Clocks>
class APGAS_AWAIT_IT clocked_async_awaiter {
public:
  clocked_async_awaiter(clocked_spawn<Clocks...> spawn, Body body)
      : m_spawn(spawn), m_body(std::move(body)) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
    require_apgas_caller<P>();
    task<> child;
    try {
      // Registered before the parent can end its phase: it is still running this await.
      auto regs = m_spawn.register_children(parent.promise(), parent.promise().m_finish);
      child = std::apply(
          [&](auto&&... r) { return run_clocked(std::move(m_body), std::move(r)...); }, regs);
    } catch (...) { // a misuse (or no memory): the parent goes on, and throws (await_resume)
      m_error = std::current_exception();
      return t_worker->transfer(parent);
    }
    return spawn(parent.promise(), child.release().promise());
  }
  void await_resume() const {
    if (m_error) std::rethrow_exception(m_error);
  }

private:
  clocked_spawn<Clocks...> m_spawn;
  Body m_body;
  std::exception_ptr m_error;
};

template <class F>
inline constexpr bool is_call_by_pointer_v = false;
template <class Fn>
inline constexpr bool is_call_by_pointer_v<call_by_pointer<Fn>> = true;

/// @brief The function a clocked remote activity runs at its place: adopts its registrations
/// there, then calls F{}(registrations..., args...); for a function pointer (F is
/// call_by_pointer, args begin with its handle), the function itself(registrations..., rest...).
template <class F, std::size_t N>
struct clocked_remote {
  template <class... Args>
  task<> operator()(std::array<clock_token, N> tokens, Args... args) const {
    std::array<clock, N> regs;
    for (std::size_t i = 0; i < N; ++i) regs[i] = co_await adopt_clock_awaiter(tokens[i]);
    auto call = [&]<std::size_t... I>(std::index_sequence<I...>)->decltype(auto) {
      if constexpr (is_call_by_pointer_v<F>) {
        return [&](auto handle, auto&&... rest) -> decltype(auto) {
          return handle.function()(std::move(regs[I])..., std::move(rest)...);
        }(std::move(args)...);
      } else {
        return F{}(std::move(regs[I])..., std::move(args)...);
      }
    };
    if constexpr (is_task_v<decltype(call(std::make_index_sequence<N>{}))>)
      co_await call(std::make_index_sequence<N>{});
    else call(std::make_index_sequence<N>{});
  }
};

/// @brief co_await async_at(p, clocked(c...), f, args...): registers the remote child here
/// (counted before the parent can end its phase), then sends it like any async_at.
template <class F, class Clocks, class... A>
class APGAS_AWAIT_IT clocked_async_at_awaiter;

template <class F, class... Clocks, class... A>
class APGAS_AWAIT_IT clocked_async_at_awaiter<F, clocked_spawn<Clocks...>, A...> {
  static constexpr std::size_t N = sizeof...(Clocks);

public:
  clocked_async_at_awaiter(place_id to, clocked_spawn<Clocks...> spawn, A&&... args)
      : m_to(to), m_spawn(spawn), m_args(std::forward<A>(args)...) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> caller) noexcept {
    require_apgas_caller<P>();
    try {
      send(caller);
    } catch (...) { // nothing was sent: thrown by await_resume (not from here, see advance)
      m_error = std::current_exception();
    }
    return false;
  }
  void await_resume() const {
    if (m_error) std::rethrow_exception(m_error);
  }

private:
  template <class P>
  void send(std::coroutine_handle<P> caller) {
    active_messages::current().check_place(m_to);
    const finish_state* spawner = caller.promise().m_finish;
    std::array<clock_token, N> tokens{};
    std::size_t registered = 0;
    try {
      for (; registered < N; ++registered)
        tokens[registered] =
            m_spawn.clocks[registered]->register_remote_child(caller.promise(), spawner, m_to);
      std::apply(
          [&](auto&&... a) {
            auto call = apgas::async_at(m_to, clocked_remote<F, N>{}, tokens,
                                        std::forward<decltype(a)>(a)...);
            auto awaiter = std::move(call).operator co_await();
            (void)awaiter.await_suspend(caller); // an async_at never suspends
          },
          std::move(m_args));
    } catch (...) { // nothing was sent: the registrations are undone
      for (std::size_t i = 0; i < registered; ++i) m_spawn.clocks[i]->unregister_remote_child(m_to);
      throw;
    }
  }

  place_id m_to;
  clocked_spawn<Clocks...> m_spawn;
  std::tuple<kept_arg_t<A>...> m_args; ///< a function handle by value (see kept_arg_t)
  std::exception_ptr m_error;
};

} // namespace apgas::detail

namespace apgas {

template <class Op, class T>
detail::advance_awaiter<T> clock::advance(Op, T value, signal s) {
  detail::require_reducible<T, Op>();
  constexpr auto combine = &detail::combine_bytes<T, Op>;
  (void)detail::registered_entry<combine, detail::code_kind::combine>::value; // see code_registry
  const detail::reduce_contribution c{nullptr, sizeof(T), combine};
  return detail::advance_awaiter<T>(*this, s, &c, &value);
}

template <class... Clocks, class Body>
detail::clocked_async_awaiter<std::decay_t<Body>, Clocks...>
async(detail::clocked_spawn<Clocks...> spawn, Body&& body) {
  return detail::clocked_async_awaiter<std::decay_t<Body>, Clocks...>(spawn,
                                                                      std::forward<Body>(body));
}

template <class... Clocks, class F, class... Args>
detail::clocked_async_at_awaiter<F, detail::clocked_spawn<Clocks...>, Args...>
async_at(place_id p, detail::clocked_spawn<Clocks...> spawn, F, Args&&... args) {
  detail::require_stateless<F>();
  return detail::clocked_async_at_awaiter<F, detail::clocked_spawn<Clocks...>, Args...>(
      p, spawn, std::forward<Args>(args)...);
}

template <class... Clocks, class R, class... P, bool NE, class... Args>
detail::clocked_async_at_awaiter<detail::call_by_pointer<R (*)(P...) noexcept(NE)>,
                                 detail::clocked_spawn<Clocks...>,
                                 detail::function_handle<R (*)(P...) noexcept(NE)>, Args...>
async_at(place_id p, detail::clocked_spawn<Clocks...> spawn, R (*f)(P...) noexcept(NE),
         Args&&... args) {
  using fn = R (*)(P...) noexcept(NE);
  return async_at(p, spawn, detail::call_by_pointer<fn>{}, detail::function_handle<fn>::of(f),
                  std::forward<Args>(args)...);
}

template <class... Clocks>
requires((std::is_same_v<Clocks, clock> && ...)) task<> advance_all(Clocks&... clocks) {
  (clocks.resume(), ...);
  (co_await clocks.advance(), ...);
}

template <class Body>
task<> clocked_finish(Body body, signal s) {
  co_await finish([&]() -> task<> {
    clock c = co_await clock::make(s);
    co_await body(c);
  });
}

} // namespace apgas
