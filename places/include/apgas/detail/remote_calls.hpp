// The calls that <apgas/place.hpp> declares: async_at and at, and the awaitables they return
// (async_at_call, at_call). A call keeps references to its arguments until it is awaited, in the
// expression that makes it: they are serialized straight into the message then, no copy of them
// kept in between (a vector argument would be copied twice).
#pragma once

#include "apgas/detail/active_messages.hpp"
#include "apgas/detail/code_registry.hpp"
#include "apgas/detail/function_handle.hpp"
#include "apgas/detail/remote_awaiters.hpp"
#include "apgas/detail/remote_bodies.hpp"
#include "apgas/detail/remote_function.hpp"
#include "apgas/place.hpp"

#include <tuple>
#include <type_traits>
#include <utility>

namespace apgas::detail {

/// @brief How async_at(p, f, args...) runs at p: a coroutine function gets a frame per activity;
/// plain asyncs that arrive together share one.
template <class F, class... Args>
using async_invoker_for = std::conditional_t<is_remote_coroutine_v<F, std::decay_t<Args>...>,
                                             async_invoker, plain_async_invoker>;

/// @brief How at(p, f, args...) runs at p: a coroutine function as an activity of the caller's
/// finish; a plain one as a remote procedure call, in p's message handler (no frame, no finish
/// traffic).
template <class F, class... Args>
using at_invoker_for =
    std::conditional_t<is_remote_coroutine_v<F, std::decay_t<Args>...>, at_invoker, rpc_invoker>;

/// @brief The entry point of async_at(p, f, args...) at p, registered (see code_registry.hpp):
/// the receiver checks the offset it gets.
template <class F, class... Args>
async_invoker_for<F, Args...> async_entry() noexcept {
  if constexpr (is_remote_coroutine_v<F, std::decay_t<Args>...>) {
    constexpr auto fn = &make_async_activity<F, std::decay_t<Args>...>;
    (void)registered_entry<fn, code_kind::async>::value;
    return fn;
  } else {
    constexpr auto fn = &run_plain_async<F, std::decay_t<Args>...>;
    (void)registered_entry<fn, code_kind::plain_async>::value;
    return fn;
  }
}

/// @brief True if async_at(p, f, args...) travels in plain runs: f is a plain function and its
/// arguments are bitwise, and not none (a run is split by their size).
template <class F, class... Args>
inline constexpr bool sent_in_plain_runs_v = !is_remote_coroutine_v<F, std::decay_t<Args>...> &&
                                             sizeof...(Args) > 0 &&
                                             (is_bitwise_v<std::decay_t<Args>> && ...);

/// @brief The run invoker of async_at(p, f, args...) (see plain_run_invoker), registered; null
/// unless it travels in plain runs.
template <class F, class... Args>
plain_run_invoker plain_run_entry() noexcept {
  if constexpr (sent_in_plain_runs_v<F, Args...>) {
    constexpr auto fn = &run_plain_run<F, std::decay_t<Args>...>;
    (void)registered_entry<fn, code_kind::plain_run>::value;
    return fn;
  } else {
    return nullptr;
  }
}

/// @brief The entry point of at(p, f, args...) at p, registered.
template <class F, class... Args>
at_invoker_for<F, Args...> at_entry() noexcept {
  if constexpr (is_remote_coroutine_v<F, std::decay_t<Args>...>) {
    constexpr auto fn = &make_at_activity<F, std::decay_t<Args>...>;
    (void)registered_entry<fn, code_kind::at>::value;
    return fn;
  } else {
    constexpr auto fn = &run_rpc<F, std::decay_t<Args>...>;
    (void)registered_entry<fn, code_kind::rpc>::value;
    return fn;
  }
}

/// @brief What async_at_call and at_call share: where the call goes (Target), references to its
/// arguments, and the refusal of a kept call (an lvalue) awaited later, when its arguments may
/// be gone.
template <class Target, class... Args>
class remote_call {
public:
  remote_call(const remote_call&) = delete;
  remote_call& operator=(const remote_call&) = delete;

  template <bool Later = false>
  void operator co_await() & {
    static_assert(Later, "apgas: await async_at(...) and at(...) where they are called "
                         "(co_await apgas::at(p, f, x)): they refer to their arguments, which "
                         "are serialized when awaited. To await a kept one, co_await "
                         "std::move(it), while its arguments are alive.");
  }

protected:
  remote_call(Target target, Args&&... args)
      : m_target(target), m_args(std::forward<Args>(args)...) {}

  Target m_target;
  std::tuple<kept_arg_t<Args>...> m_args; ///< read when awaited, within the co_await expression
};

} // namespace apgas::detail

namespace apgas {

template <class F, class... Args>
class APGAS_AWAIT_IT async_at_call
    : public detail::remote_call<detail::async_at_target<detail::async_invoker_for<F, Args...>>,
                                 Args...> {
  using invoker = detail::async_invoker_for<F, Args...>;
  using base = detail::remote_call<detail::async_at_target<invoker>, Args...>;

public:
  /// @brief co_await: counts the activity with the caller's finish and sends it; the caller
  /// goes on at once.
  detail::async_at_awaiter<invoker, Args...> operator co_await() && {
    return detail::async_at_awaiter<invoker, Args...>(this->m_target, std::move(this->m_args));
  }
  using base::operator co_await; // a kept call: refused

private:
  template <class G, class... A>
  friend async_at_call<G, A...> async_at(place_id p, G, A&&... args);

  async_at_call(detail::async_at_target<invoker> target, Args&&... args)
      : base(target, std::forward<Args>(args)...) {}
};

template <class F, class... Args>
class APGAS_AWAIT_IT at_call
    : public detail::remote_call<detail::at_target<detail::at_invoker_for<F, Args...>>, Args...> {
  using invoker = detail::at_invoker_for<F, Args...>;
  using base = detail::remote_call<detail::at_target<invoker>, Args...>;

public:
  /// @brief What co_await gives: f's value (the value of its task, for a coroutine).
  using value_type = remote_result_t<F, Args...>;

  /// @brief co_await: sends the call; the caller suspends (its worker keeps working) until
  /// the value, or the error, comes back.
  detail::at_awaiter<value_type, invoker, Args...> operator co_await() && {
    return detail::at_awaiter<value_type, invoker, Args...>(this->m_target,
                                                            std::move(this->m_args));
  }
  using base::operator co_await; // a kept call: refused

private:
  template <class G, class... A>
  friend at_call<G, A...> at(place_id p, G, A&&... args);

  at_call(detail::at_target<invoker> target, Args&&... args)
      : base(target, std::forward<Args>(args)...) {}
};

template <class F, class... Args>
async_at_call<F, Args...> async_at(place_id p, F, Args&&... args) {
  detail::require_stateless<F>();
  detail::require_serializable_args<Args...>();
  detail::active_messages& e = detail::active_messages::current();
  e.check_place(p);
  return async_at_call<F, Args...>(
      {&e, p, detail::async_entry<F, Args...>(), detail::plain_run_entry<F, Args...>()},
      std::forward<Args>(args)...);
}

template <class R, class... P, bool NE, class... Args>
async_at_call<detail::call_by_pointer<R (*)(P...) noexcept(NE)>,
              detail::function_handle<R (*)(P...) noexcept(NE)>, Args...>
async_at(place_id p, R (*f)(P...) noexcept(NE), Args&&... args) {
  using fn = R (*)(P...) noexcept(NE);
  return async_at(p, detail::call_by_pointer<fn>{}, detail::function_handle<fn>::of(f),
                  std::forward<Args>(args)...);
}

template <class F, class... Args>
at_call<F, Args...> at(place_id p, F, Args&&... args) {
  detail::require_stateless<F>();
  detail::require_serializable_args<Args...>();
  using R = remote_result_t<F, Args...>;
  static_assert(std::is_void_v<R> || serializable<R>,
                "apgas: the value returned by the function given to at() must be serializable");
  detail::active_messages::current().check_place(p);
  return at_call<F, Args...>({p, detail::at_entry<F, Args...>()}, std::forward<Args>(args)...);
}

template <class R, class... P, bool NE, class... Args>
at_call<detail::call_by_pointer<R (*)(P...) noexcept(NE)>,
        detail::function_handle<R (*)(P...) noexcept(NE)>, Args...>
at(place_id p, R (*f)(P...) noexcept(NE), Args&&... args) {
  using fn = R (*)(P...) noexcept(NE);
  return at(p, detail::call_by_pointer<fn>{}, detail::function_handle<fn>::of(f),
            std::forward<Args>(args)...);
}

} // namespace apgas
