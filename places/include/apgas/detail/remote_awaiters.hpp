// How async_at and at leave the caller's place: the awaiters that serialize the arguments straight
// into the message when the call is awaited, count the activity with the caller's finish, and
// (for an `at`) suspend the caller until the reply comes back. remote_calls.hpp wraps them in
// the types async_at and at return.
#pragma once

#include "apgas/detail/active_messages.hpp"
#include "apgas/detail/trace.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <atomic>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace apgas::detail {

/// @brief Serializes references to a remote call's arguments (see apgas::at_call).
template <class Refs>
void serialize_args(byte_writer& w, const Refs& args) {
  std::apply([&w](const auto&... a) { serialize_all(w, a...); }, args);
}

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
  plain_run_invoker run; ///< the function's run invoker if it travels in plain runs, else null
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
    if constexpr (std::is_same_v<Invoker, plain_async_invoker> && sizeof...(A) > 0 &&
                  (is_bitwise_v<std::decay_t<A>> && ...)) {
      // The common stream (numbers, plain structs): written straight into the coalescing
      // buffer, nothing staged.
      constexpr std::size_t k_args_bytes = (std::size_t{0} + ... + sizeof(std::decay_t<A>));
      m_target.messages->send_plain_async_written(f, m_target.to, m_target.run, k_args_bytes,
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

  /// An `at` of a plain function needs nothing of the caller's frame: it is sent here, and a
  /// worker with nothing else to do waits for the reply itself, as a blocking MPI call would
  /// (resuming through the scheduler after its next search costs more than a short round
  /// trip). Here, not in await_suspend: going on from there means resuming the caller from
  /// inside its own resumption, which a loop of `at`s turns into a deep stack wherever the
  /// compiler does not make that a tail call (-O1).
  bool await_ready() {
    if constexpr (k_rpc) {
      active_messages& e = active_messages::current();
      std::vector<std::byte>& bytes = e.start_rpc(m_invoker);
      byte_writer w(bytes);
      serialize_args(w, m_args);
      send(e, bytes);
      return e.wait_in_place(&replied, this);
    } else {
      return false;
    }
  }
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    active_messages& e = active_messages::current();
    m_caller = &caller.promise();
    if constexpr (!k_rpc) {
      // The body will be an activity of the caller's finish at the other place.
      std::vector<std::byte>& bytes = e.start_at(*m_caller->m_finish, m_invoker);
      byte_writer w(bytes);
      serialize_args(w, m_args);
      e.record_send(*m_caller->m_finish, m_to);
      send(e, bytes);
    }
    // Count what this worker leaves behind before the reply can resume us elsewhere.
    const std::coroutine_handle<> next = t_worker->suspend_for_external();
    if (m_state.exchange(k_suspended, std::memory_order_acq_rel) == k_replied)
      e.resume(*m_caller); // the reply came meanwhile: on_reply left the resumption to us
    return next;
  }
  R await_resume() {
    if (g_trace_on) [[unlikely]]
      m_wait.end(trace_kind::at_wait, m_to);
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
    // After this exchange the awaiter may be gone (a caller that waited in place goes on at
    // once), unless the caller had suspended: then it waits for us, and m_caller, written
    // before its exchange, is seen through ours.
    if (m_state.exchange(k_replied, std::memory_order_acq_rel) == k_suspended)
      messages.resume(*m_caller);
  }

private:
  /// k_waiting, then k_suspended (the caller gave up waiting in place) and k_replied in either
  /// order: whichever comes second resumes the caller through the scheduler. acq_rel
  /// exchanges: the reply's value and the suspension's bookkeeping are seen by the other side.
  static constexpr std::uint8_t k_waiting = 0, k_suspended = 1, k_replied = 2;
  static constexpr bool k_rpc = std::is_same_v<Invoker, rpc_invoker>;
  /// Sends the request; from here on, on_reply may run, on any thread.
  void send(active_messages& e, std::vector<std::byte>& bytes) {
    if (g_trace_on) [[unlikely]]
      m_wait.begin(); // before the send: the reply may come at once
    e.finish_at(m_to, bytes, this);
  }
  static bool replied(const void* self) noexcept {
    // acquire: pairs with on_reply's exchange (the value or error written before it).
    return static_cast<const at_awaiter*>(self)->m_state.load(std::memory_order_acquire) ==
           k_replied;
  }
  std::atomic<std::uint8_t> m_state{k_waiting};
  place_id m_to;
  Invoker m_invoker;
  std::tuple<A&&...> m_args; ///< used by await_suspend only, within the co_await expression
  promise_base* m_caller = nullptr;
  std::exception_ptr m_error; ///< what the body threw, or why its value did not arrive
  std::conditional_t<std::is_void_v<R>, bool, std::optional<R>> m_value{}; ///< unused for void
  trace_wait m_wait; ///< the caller's, written before the request leaves
};

} // namespace apgas::detail
