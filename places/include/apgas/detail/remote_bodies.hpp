// What async_at and at run at the place where they arrive: the activity of a coroutine
// function (a frame each), a plain function run on the frame of a batch or in the message
// handler, and the reply of an `at` with its value or its error. Each is registered as an entry
// point (code_registry.hpp) by the call that sends it (remote_calls.hpp).
#pragma once

#include "apgas/detail/active_messages.hpp"
#include "apgas/detail/remote_function.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <cstddef>
#include <exception>
#include <optional>
#include <span>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace apgas::detail {

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

/// @brief A slice of a plain run at the place it runs (plain_run_invoker): n plain asyncs of f
/// whose bitwise arguments lie `stride` bytes apart, in one loop on the batch's frame (no call
/// through a pointer per async).
template <class F, class... Args>
void run_plain_run(const std::byte* args, std::size_t stride, std::size_t n,
                   finish_state& fs) noexcept {
  constexpr std::size_t k_args_bytes = (std::size_t{0} + ... + sizeof(Args));
  for (std::size_t i = 0; i < n; ++i, args += stride) {
    try {
      if (stride != k_args_bytes) [[unlikely]] // a damaged message: this async fails
        throw std::length_error("apgas: a plain run's arguments have the wrong size");
      byte_reader r(std::span(args, stride));
      auto a = deserialize_all<Args...>(r);
      apply_owned<F>(a);
    } catch (...) { // f threw: that async fails alone
      fs.add_exception(std::current_exception());
    }
  }
}

template <class F, class... Args>
promise_base* make_at_activity(byte_reader& r, reply_address to) {
  auto args = deserialize_all<Args...>(r);
  return &at_body<F, Args...>(std::move(args), to).release().promise();
}

} // namespace apgas::detail
