/// @file Futures: start work now, await its value later.
///
///     apgas::future<int> a = co_await apgas::at_async(p, [](int x) { return x + 1; }, 41);
///     apgas::future<int> b = co_await apgas::at_async(q, [](int x) { return x * 2; }, 21);
///     auto [x, y] = co_await apgas::when_all(std::move(a), std::move(b)); // both in flight
///     apgas::future<long> c = co_await apgas::start(fib(30));             // any task
///     long v = co_await c;
///
/// `start(t)` starts task t as an activity of the caller's finish (so the finish waits for it
/// even if nobody awaits the future) and gives a future of its value at once; `at_async(p, f,
/// args...)` is start() of `at(p, f, args...)`: the request leaves before the caller goes on.
/// `co_await f` gives the value (or rethrows the exception) once it is there, suspending the
/// awaiting activity until then; a future is awaited once (it is move-only). An exception
/// reaches whoever awaits the future, not the finish; one that nobody awaits is reported on
/// stderr when the future's last trace goes.
#pragma once

#include "apgas/detail/await_required.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/spin_lock.hpp"
#include "apgas/detail/worker.hpp"
#include "apgas/finish.hpp"
#include "apgas/place.hpp"
#include "apgas/task.hpp"

#include <coroutine>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace apgas {

template <class T>
class future;

namespace detail {

/// @brief Prints an exception that no awaiter saw (data/src/future.cpp).
void report_unobserved(const std::exception_ptr& error) noexcept;

/// @brief What a future's work leaves for its awaiter. Thread-safety: any thread (the lock).
template <class T>
class future_state {
  using stored = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

public:
  future_state() = default;
  future_state(const future_state&) = delete;
  future_state& operator=(const future_state&) = delete;
  ~future_state() {
    if (m_error && !m_observed) report_unobserved(m_error);
  }

  /// @brief The work ended with `value` (or `error`): wakes the awaiter, if one waits.
  void complete(std::optional<stored> value, std::exception_ptr error) noexcept {
    promise_base* waiter = nullptr;
    scheduler* sched = nullptr;
    {
      const std::lock_guard guard(m_lock);
      m_value = std::move(value);
      m_error = std::move(error);
      m_ready = true;
      waiter = std::exchange(m_waiter, nullptr);
      sched = m_sched;
    }
    if (waiter != nullptr) sched->inject(as_independent(waiter));
  }
  /// @brief True once complete (a lock-free hint is not needed: awaits are rare).
  bool ready() {
    const std::lock_guard guard(m_lock);
    return m_ready;
  }
  /// @brief Queues `awaiter` (its worker goes on with `next`); false if already complete.
  bool wait(promise_base& awaiter, scheduler& sched) {
    const std::lock_guard guard(m_lock);
    if (m_ready) return false;
    m_waiter = &awaiter;
    m_sched = &sched;
    return true;
  }
  /// @brief The value (or the exception). pre: complete.
  stored take() {
    m_observed = true;
    if (m_error) std::rethrow_exception(m_error);
    return std::move(*m_value);
  }

private:
  spin_lock m_lock;
  bool m_ready = false;
  bool m_observed = false;
  std::optional<stored> m_value;
  std::exception_ptr m_error;
  promise_base* m_waiter = nullptr;
  scheduler* m_sched = nullptr;
};

/// @brief The activity of a future: runs `t`, leaves its value or exception in `state`.
template <class T>
task<> run_future(std::shared_ptr<future_state<T>> state, task<T> t) {
  try {
    if constexpr (std::is_void_v<T>) {
      co_await std::move(t);
      state->complete(std::monostate{}, nullptr);
    } else {
      state->complete(co_await std::move(t), nullptr);
    }
  } catch (...) {
    state->complete(std::nullopt, std::current_exception());
  }
}

/// @brief co_await start(t): spawns run_future as an activity of the caller's finish, then gives
/// the future back (under work-first the new activity runs first, up to its first suspension:
/// an `at` sends its request before the caller goes on).
template <class T>
class APGAS_AWAIT_IT start_awaiter {
public:
  explicit start_awaiter(task<T> t) : m_task(std::move(t)) {}
  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    m_state = std::make_shared<future_state<T>>();
    task<> child = run_future<T>(m_state, std::move(m_task));
    return spawn(caller.promise(), child.release().promise());
  }
  future<T> await_resume() noexcept { return future<T>(std::move(m_state)); }

private:
  task<T> m_task;
  std::shared_ptr<future_state<T>> m_state;
};

/// @brief co_await f: the future's value, once it is there.
template <class T>
class APGAS_AWAIT_IT future_awaiter {
public:
  explicit future_awaiter(std::shared_ptr<future_state<T>> s) : m_state(std::move(s)) {}
  bool await_ready() { return m_state->ready(); }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    worker& w = *t_worker;
    // What this worker runs next is decided before the awaiter is published: the work may
    // complete at once on another worker, which then makes the awaiter runnable.
    const std::coroutine_handle<> next = w.suspend_for_external();
    if (!m_state->wait(caller.promise(), w.sched()))
      w.sched().inject(as_independent(&caller.promise()));
    return next;
  }
  T await_resume() {
    if constexpr (std::is_void_v<T>) (void)m_state->take();
    else return m_state->take();
  }

private:
  std::shared_ptr<future_state<T>> m_state;
};

/// @brief The task of at_async: `at(p, f, args...)` with the arguments kept in its frame.
template <class R, class F, class... Args>
task<R> at_task(place_id p, Args... args) {
  if constexpr (std::is_void_v<R>) co_await apgas::at(p, F{}, std::move(args)...);
  else co_return co_await apgas::at(p, F{}, std::move(args)...);
}

} // namespace detail

/// @brief The value of work started with start() or at_async(), once it is there. Move-only;
/// awaited once. Thread-safety: one activity awaits it.
template <class T>
class future {
public:
  future() = default;
  future(future&&) noexcept = default;
  future& operator=(future&&) noexcept = default;
  future(const future&) = delete;
  future& operator=(const future&) = delete;

  /// @brief True once its work has ended (awaiting it then does not suspend).
  bool ready() const { return m_state != nullptr && m_state->ready(); }
  /// @brief True unless default-made or awaited already.
  bool valid() const noexcept { return m_state != nullptr; }

  /// @brief The value (or the work's exception). @throws std::logic_error on a future that is
  /// not valid().
  detail::future_awaiter<T> operator co_await() && {
    if (m_state == nullptr) throw std::logic_error("apgas: awaiting an empty future");
    return detail::future_awaiter<T>(std::move(m_state));
  }
  detail::future_awaiter<T> operator co_await() & { return std::move(*this).operator co_await(); }

private:
  template <class U>
  friend class detail::start_awaiter;
  explicit future(std::shared_ptr<detail::future_state<T>> s) : m_state(std::move(s)) {}
  std::shared_ptr<detail::future_state<T>> m_state;
};

/// @brief Starts task `t` as an activity of the caller's finish; gives its future at once.
template <class T>
APGAS_AWAIT_IT detail::start_awaiter<T> start(task<T> t) {
  return detail::start_awaiter<T>(std::move(t));
}

/// @brief Starts `at(p, f, args...)` (the request leaves now); gives the future of its value.
/// f captures nothing, or is a pointer to a free or static member function, as for at().
template <class F, class... Args>
APGAS_AWAIT_IT auto at_async(place_id p, F f, Args&&... args) {
  if constexpr (detail::is_function_pointer_v<F>) {
    // Sent as call_by_pointer, as at sends it (see function_handle.hpp).
    return at_async(p, detail::call_by_pointer<F>{}, detail::function_handle<F>::of(f),
                    std::forward<Args>(args)...);
  } else {
    detail::require_stateless<F>();
    using R = typename detail::remote_result<F, std::decay_t<Args>...>::type;
    return start(detail::at_task<R, F, std::decay_t<Args>...>(p, std::forward<Args>(args)...));
  }
}

/// @brief Every future's value, as a tuple (std::monostate for future<void>), once all are
/// there; the first exception among them (in argument order) is rethrown after all ended.
template <class... T>
APGAS_AWAIT_IT task<std::tuple<std::conditional_t<std::is_void_v<T>, std::monostate, T>...>>
when_all(future<T>... fs) {
  std::exception_ptr first;
  auto one = [&first]<class U>(
                 future<U>& f) -> task<std::conditional_t<std::is_void_v<U>, std::monostate, U>> {
    try {
      if constexpr (std::is_void_v<U>) {
        co_await f;
        co_return std::monostate{};
      } else {
        co_return co_await f;
      }
    } catch (...) {
      if (!first) first = std::current_exception();
      co_return std::conditional_t<std::is_void_v<U>, std::monostate, U>{};
    }
  };
  std::tuple<std::conditional_t<std::is_void_v<T>, std::monostate, T>...> out{co_await one(fs)...};
  if (first) std::rethrow_exception(first);
  co_return out;
}

namespace detail {

template <class F>
struct future_value {};
template <class T>
struct future_value<future<T>> {
  using type = T;
};
template <class F>
concept a_future = requires {
  typename future_value<F>::type;
};

/// @brief when_all over a range: awaits each future in the range's order, keeps the first
/// exception and rethrows it once all have ended (so no work outlives the call).
template <class T, class R>
task<std::conditional_t<std::is_void_v<T>, void, std::vector<T>>> when_all_of(R futures) {
  std::exception_ptr first;
  std::conditional_t<std::is_void_v<T>, std::monostate, std::vector<T>> out;
  if constexpr (std::ranges::sized_range<R> && !std::is_void_v<T>)
    out.reserve(std::ranges::size(futures));
  for (auto& f : futures) {
    try {
      if constexpr (std::is_void_v<T>) {
        co_await std::move(f);
      } else {
        // After an exception the values are dropped, so none needs a default value.
        T v = co_await std::move(f);
        if (!first) out.push_back(std::move(v));
      }
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  if constexpr (std::is_void_v<T>) co_return;
  else co_return out;
}

} // namespace detail

/// @brief Every value of a range of futures, in the range's order (std::vector<future<T>> into
/// std::vector<T>; futures of void give void), once all are there; the first exception in the
/// range's order is rethrown after all have ended. The range is taken by value: pass
/// `std::move(fs)`, as each future is awaited once.
template <std::ranges::input_range R>
requires detail::a_future<std::ranges::range_value_t<R>> APGAS_AWAIT_IT auto when_all(R&& futures) {
  static_assert(!std::is_lvalue_reference_v<R>,
                "apgas: when_all takes its range of futures by value, as each future is awaited "
                "once: write when_all(std::move(futures))");
  using T = typename detail::future_value<std::ranges::range_value_t<R>>::type;
  return detail::when_all_of<T, std::remove_cvref_t<R>>(std::forward<R>(futures));
}

} // namespace apgas
