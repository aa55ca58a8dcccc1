/// @file Places: here(), places(), and starting work at another place (the collectives
/// for_each_place and at_each_place are in <apgas/collectives.hpp>, included here).
///
///     co_await apgas::async_at(p, [](int x) { ... }, 42);        // governed by our finish
///     int v = co_await apgas::at(p, [](int x) { return x + 1; }, 41);
///
/// The function is a function object that captures nothing (a lambda with []): the same binary
/// runs at every place, so its type names the code; its arguments are serialized (see
/// <apgas/serialization.hpp>). It may return a value or a task (and then suspend).
#pragma once

#include "apgas/detail/active_messages.hpp"
#include "apgas/detail/code_registry.hpp"
#include "apgas/finish.hpp"
#include "apgas/remote_exceptions.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace apgas {

/// @brief The index of a place: 0 .. places()-1.
using place_id = detail::place_id;

/// @brief A place that cannot serve the operation (X10's BadPlaceException): a place id that
/// names no place (thrown at the caller, before anything is sent), or a global_ref used away
/// from its home.
class bad_place : public std::out_of_range {
public:
  /// what(): "apgas: place <p> does not exist (places are 0 to <count - 1>)".
  bad_place(place_id p, place_id count);
  /// @brief Place `p` refused, for the reason `what` gives.
  bad_place(place_id p, const std::string& what) : std::out_of_range(what), m_place(p) {}
  /// @brief The place that was named (or where a global_ref was used).
  place_id place() const noexcept { return m_place; }

  // It crosses places whole (see <apgas/remote_exceptions.hpp>).
  friend void apgas_serialize(byte_writer& w, const bad_place& e) {
    serialize_all(w, e.m_place, std::string(e.what()));
  }
  friend bad_place apgas_deserialize(byte_reader& r, std::type_identity<bad_place>) {
    auto [p, what] = deserialize_all<place_id, std::string>(r);
    return bad_place(p, what);
  }

private:
  place_id m_place;
};

/// @brief This place.
place_id here();
/// @brief The number of places.
place_id places();

namespace detail {

template <class F>
constexpr void require_stateless() {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "apgas: the function given to async_at/at must capture nothing (a lambda with [] "
                "or an empty function object): it is named by its type at the other place. Pass "
                "the data it needs as arguments; they are serialized.");
}

template <class... Args>
constexpr void require_serializable_args() {
  // One precise message per argument that cannot cross places (see serialization.hpp).
  (diagnose<std::decay_t<Args>>(), ...);
}

/// @brief What f(args...) gives back once awaited: R for R or task<R>.
template <class F, class... Args>
struct remote_result {
  using raw = std::invoke_result_t<F&, Args&...>;
  template <class X>
  struct unwrap {
    using type = X;
  };
  template <class X>
  struct unwrap<task<X>> {
    using type = X;
  };
  using type = typename unwrap<raw>::type;
};

/// @brief Calls F{} on an activity's own copies of its arguments: as rvalues when F accepts
/// them (a by-value parameter then takes the copy over instead of copying it again), else as
/// lvalues (parameters taken by reference).
template <class F, class... Args>
decltype(auto) apply_owned(std::tuple<Args...>& args) {
  F f{};
  if constexpr (std::is_invocable_v<F&, Args&&...> &&
                std::is_same_v<std::invoke_result_t<F&, Args&&...>,
                               typename remote_result<F, Args...>::raw>)
    return std::apply(f, std::move(args));
  else return std::apply(f, args);
}

/// @brief A remote async of a coroutine function at the place it runs (a plain function runs
/// in a batch instead, see run_plain_async).
template <class F, class... Args>
task<> async_body(std::tuple<Args...> args) {
  co_await apply_owned<F>(args);
}

/// @brief What an `at` body computed: its value (a bool for void), or the error it threw.
template <class R>
using at_value = std::conditional_t<std::is_void_v<R>, bool, std::optional<R>>;

/// @brief Sends the reply of an `at` body: its value, or `error` (the body threw, or it did not
/// even start), or the error of serializing the value. The reply is written into a per-thread
/// buffer, taken only now that the value is computed.
template <class R>
void send_at_reply(reply_address to, std::exception_ptr error, at_value<R>& value) {
  active_messages& messages = active_messages::current();
  std::vector<std::byte>& out = active_messages::message_buffer();
  std::size_t ok_at = 0;
  try {
    if (error) std::rethrow_exception(error);
    ok_at = messages.start_reply(out, to);
    if constexpr (!std::is_void_v<R>) {
      byte_writer w(out);
      serialize(w, *value);
    }
  } catch (...) { // f threw, or its value did not serialize
    return messages.send_error_reply(to, std::current_exception());
  }
  messages.finish_reply(to.place, out, ok_at, true);
}

/// @brief The activity of an `at` of a coroutine function at the place it runs: awaits
/// f(args...), then sends the value (or the error) back. (An `at` of a plain function runs
/// without a frame, see run_rpc.)
template <class F, class... Args>
task<> at_body(std::tuple<Args...> args, reply_address to) {
  using R = typename remote_result<F, Args...>::type;
  at_value<R> value{};
  std::exception_ptr error;
  try {
    if constexpr (std::is_void_v<R>) co_await apply_owned<F>(args);
    else value.emplace(co_await apply_owned<F>(args));
  } catch (...) {
    error = std::current_exception();
  }
  send_at_reply<R>(to, error, value);
}

/// @brief The body of an `at` of a plain function, where it arrives: deserializes the
/// arguments, computes f(args...) and sends the value (or the error) back, all in the
/// message handler (see active_messages::on_rpc).
template <class F, class... Args>
void run_rpc(byte_reader& r, reply_address to) {
  using R = typename remote_result<F, Args...>::type;
  at_value<R> value{};
  std::exception_ptr error;
  try {
    auto args = deserialize_all<Args...>(r);
    if constexpr (std::is_void_v<R>) apply_owned<F>(args);
    else value.emplace(apply_owned<F>(args));
  } catch (...) { // f threw, or its arguments did not deserialize
    error = std::current_exception();
  }
  send_at_reply<R>(to, error, value);
}

template <class F, class... Args>
promise_base* make_async_activity(byte_reader& r) {
  auto args = deserialize_all<Args...>(r);
  return &async_body<F, Args...>(std::move(args)).release().promise();
}

/// @brief A remote async of a plain function at the place it runs: calls f on arguments
/// deserialized from `r`, on the frame of the batch it arrived in (see plain_batches.hpp).
template <class F, class... Args>
void run_plain_async(byte_reader& r) {
  auto args = deserialize_all<Args...>(r);
  apply_owned<F>(args);
}

template <class F, class... Args>
promise_base* make_at_activity(byte_reader& r, reply_address to) {
  auto args = deserialize_all<Args...>(r);
  return &at_body<F, Args...>(std::move(args), to).release().promise();
}

/// @brief Serializes references to a remote call's arguments (see remote_call).
template <class Refs>
void serialize_args(byte_writer& w, const Refs& args) {
  std::apply([&w](const auto&... a) { serialize_all(w, a...); }, args);
}

/// @brief What async_at() and at() return: the call, with references to its arguments, to be
/// awaited in the expression that makes it. The arguments are serialized straight into the
/// message when it is awaited: no copy of them is kept in between (a vector argument would be
/// copied twice). Hence it cannot be kept and awaited later, when the arguments may be gone:
/// `co_await at(p, f, x)` compiles, `auto a = at(p, f, x); co_await a;` does not, and
/// `co_await std::move(a)` sends what x holds then.
template <class Awaiter, class Fixed, class... A>
class APGAS_AWAIT_IT remote_call {
public:
  remote_call(Fixed fixed, A&&... args) : m_fixed(fixed), m_args(std::forward<A>(args)...) {}
  remote_call(const remote_call&) = delete;
  remote_call& operator=(const remote_call&) = delete;

  Awaiter operator co_await() && { return Awaiter(m_fixed, std::move(m_args)); }
  template <bool Later = false>
  void operator co_await() & {
    static_assert(Later, "apgas: await async_at(...) and at(...) where they are called "
                         "(co_await apgas::at(p, f, x)): they refer to their arguments, which "
                         "are serialized when awaited. To await a kept one, co_await "
                         "std::move(it), while its arguments are alive.");
  }

private:
  Fixed m_fixed;
  std::tuple<A&&...> m_args;
};

/// @brief Writes bitwise arguments in place, exactly as serialize_all would (their bytes, in
/// order): the transport::message_writer of a plain async's arguments.
template <class Refs>
void write_bitwise_args(std::byte* at, const void* args) noexcept {
  std::apply(
      [&at](const auto&... a) {
        ((std::memcpy(at, std::addressof(a), sizeof(a)), at += sizeof(a)), ...);
      },
      *static_cast<const Refs*>(args));
}

/// @brief Where an async_at goes, and how it runs there.
template <class Invoker>
struct async_at_target {
  active_messages* messages; ///< of this process (the runtime outlives every activity)
  place_id to;
  Invoker invoker;
};

/// @brief co_await async_at(...): counts and sends the activity; the caller goes on at once.
/// The arguments are serialized before anything is counted: if that throws, the exception
/// comes out of the co_await and the finish does not wait for an activity that was never sent.
/// (Bitwise arguments of a plain function are written after counting, straight into the
/// coalescing buffer: writing their bytes cannot fail.)
/// Invoker is async_invoker (f is a coroutine: a frame per activity) or plain_async_invoker.
template <class Invoker, class... A>
class async_at_awaiter {
public:
  async_at_awaiter(async_at_target<Invoker> target, std::tuple<A&&...>&& args)
      : m_target(target), m_args(std::move(args)) {}
  bool await_ready() const noexcept { return false; }
  // Inline always: the send path of a stream of remote asyncs is inline down to the coalescing
  // buffer (see send_plain_async_written), which GCC does not do on its own here.
  template <class P>
  [[gnu::always_inline]] bool await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    finish_state& f = *caller.promise().m_finish;
    if constexpr (std::is_same_v<Invoker, plain_async_invoker> &&
                  (is_bitwise_v<std::decay_t<A>> && ...)) {
      // The common stream (numbers, plain structs): written straight into the coalescing
      // buffer, nothing staged.
      constexpr std::size_t k_args_bytes = (std::size_t{0} + ... + sizeof(std::decay_t<A>));
      m_target.messages->send_plain_async_written(f, m_target.to, m_target.invoker, k_args_bytes,
                                                  &write_bitwise_args<std::tuple<A&&...>>, &m_args);
    } else {
      std::vector<std::byte>& bytes = m_target.messages->start_async(f, m_target.invoker);
      byte_writer w(bytes);
      serialize_args(w, m_args);
      m_target.messages->send_async(f, m_target.to, bytes);
    }
    return false; // never suspends
  }
  void await_resume() const noexcept {}

private:
  async_at_target<Invoker> m_target;
  std::tuple<A&&...> m_args;
};

/// @brief Where an at goes, and how it runs there.
template <class Invoker>
struct at_target {
  place_id to;
  Invoker invoker;
};

/// @brief co_await at(...): the caller suspends until the value (or the error) comes back.
/// The arguments are serialized straight into the message (before anything is counted or
/// suspended: an argument that fails to serialize throws out of the co_await).
/// Invoker is at_invoker (f is a coroutine: its body is an activity of the caller's finish at
/// the other place) or rpc_invoker (a plain function: it runs in the handler, see on_rpc).
template <class R, class Invoker, class... A>
class at_awaiter final : public reply_sink {
public:
  at_awaiter(at_target<Invoker> target, std::tuple<A&&...>&& args)
      : m_to(target.to), m_invoker(target.invoker), m_args(std::move(args)) {}
  at_awaiter(const at_awaiter&) = delete;
  at_awaiter& operator=(const at_awaiter&) = delete;

  bool await_ready() const noexcept { return false; }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    active_messages& e = active_messages::current();
    m_caller = &caller.promise();
    constexpr bool is_rpc = std::is_same_v<Invoker, rpc_invoker>;
    std::vector<std::byte>* message;
    if constexpr (is_rpc) message = &e.start_rpc(m_invoker);
    else message = &e.start_at(*m_caller->m_finish, m_invoker);
    std::vector<std::byte>& bytes = *message;
    byte_writer w(bytes);
    serialize_args(w, m_args);
    if constexpr (!is_rpc) e.record_send(*m_caller->m_finish, m_to);
    // Count what this worker leaves behind before the reply can resume us elsewhere.
    const std::coroutine_handle<> next = t_worker->suspend_for_external();
    e.finish_at(m_to, bytes, this); // from here on, `this` may be resumed
    return next;
  }
  R await_resume() {
    if (m_error) std::rethrow_exception(m_error);
    if constexpr (!std::is_void_v<R>) return std::move(*m_value);
  }
  void on_reply(bool ok, std::span<const std::byte> payload) override {
    // The value is deserialized here, straight from the received bytes (no copy of them).
    active_messages& messages = active_messages::current();
    if (!ok) {
      m_error = messages.read_error_reply(payload);
    } else if constexpr (!std::is_void_v<R>) {
      try {
        byte_reader r(payload);
        m_value.emplace(deserialize<R>(r));
      } catch (...) {
        m_error = std::current_exception(); // the value did not deserialize here
      }
    }
    messages.resume(*m_caller);
  }

private:
  place_id m_to;
  Invoker m_invoker;
  std::tuple<A&&...> m_args; ///< used by await_suspend only, within the co_await expression
  promise_base* m_caller = nullptr;
  std::exception_ptr m_error; ///< what the body threw, or why its value did not arrive
  std::conditional_t<std::is_void_v<R>, bool, std::optional<R>> m_value{}; ///< unused for void
};

} // namespace detail

/// @brief Starts f(args...) as an activity at place p, governed by the caller's finish
/// (wherever that finish lives). @throws bad_place if p is not a place.
template <class F, class... Args>
APGAS_AWAIT_IT auto async_at(place_id p, F, Args&&... args) {
  detail::require_stateless<F>();
  detail::require_serializable_args<Args...>();
  detail::active_messages& e = detail::active_messages::current();
  e.check_place(p);
  constexpr bool coroutine =
      detail::is_task_v<typename detail::remote_result<F, std::decay_t<Args>...>::raw>;
  // A coroutine function gets a frame per activity at p; plain asyncs that arrive together
  // share one.
  using invoker = std::conditional_t<coroutine, detail::async_invoker, detail::plain_async_invoker>;
  // The invoker is registered as an entry point: the receiver checks the offset it gets.
  using detail::code_kind;
  invoker inv;
  if constexpr (coroutine) {
    constexpr auto fn = &detail::make_async_activity<F, std::decay_t<Args>...>;
    (void)detail::registered_entry<fn, code_kind::async>::value;
    inv = fn;
  } else {
    constexpr auto fn = &detail::run_plain_async<F, std::decay_t<Args>...>;
    (void)detail::registered_entry<fn, code_kind::plain_async>::value;
    inv = fn;
  }
  using awaiter = detail::async_at_awaiter<invoker, Args...>;
  return detail::remote_call<awaiter, detail::async_at_target<invoker>, Args...>(
      detail::async_at_target<invoker>{&e, p, inv}, std::forward<Args>(args)...);
}

/// @brief Runs f(args...) at place p and gives its value back; the caller suspends meanwhile
/// (its worker keeps working). An exception at p is rethrown here (as remote<E>, or as a
/// remote_exception: see <apgas/remote_exceptions.hpp>), and nowhere else.
/// Asyncs that f starts are governed by the caller's finish. @throws bad_place.
template <class F, class... Args>
APGAS_AWAIT_IT auto at(place_id p, F, Args&&... args) {
  detail::require_stateless<F>();
  detail::require_serializable_args<Args...>();
  using R = typename detail::remote_result<F, std::decay_t<Args>...>::type;
  static_assert(std::is_void_v<R> || serializable<R>,
                "apgas: the value returned by the function given to at() must be serializable");
  detail::active_messages::current().check_place(p);
  constexpr bool coroutine =
      detail::is_task_v<typename detail::remote_result<F, std::decay_t<Args>...>::raw>;
  // A coroutine function runs as an activity at p; a plain one is a remote procedure call,
  // run in p's message handler: no frame, no finish traffic.
  using invoker = std::conditional_t<coroutine, detail::at_invoker, detail::rpc_invoker>;
  using detail::code_kind;
  invoker inv;
  if constexpr (coroutine) {
    constexpr auto fn = &detail::make_at_activity<F, std::decay_t<Args>...>;
    (void)detail::registered_entry<fn, code_kind::at>::value;
    inv = fn;
  } else {
    constexpr auto fn = &detail::run_rpc<F, std::decay_t<Args>...>;
    (void)detail::registered_entry<fn, code_kind::rpc>::value;
    inv = fn;
  }
  using awaiter = detail::at_awaiter<R, invoker, Args...>;
  return detail::remote_call<awaiter, detail::at_target<invoker>, Args...>(
      detail::at_target<invoker>{p, inv}, std::forward<Args>(args)...);
}

} // namespace apgas

#include "apgas/collectives.hpp"
