// How an aggregator's batches (<apgas/aggregator.hpp>) are laid out and run: the updates'
// arguments back to back in the buffer, read back where the batch arrives, where the message
// handler runs F on each (or on the whole batch); and the awaiter that binds a new aggregator to
// its maker's finish.
#pragma once

#include "apgas/global_ref.hpp"
#include "apgas/serialization.hpp"
#include "apgas/task.hpp"

#include <coroutine>
#include <cstddef>
#include <cstring>
#include <exception>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>

namespace apgas {
template <class F, class T, class... Args>
class aggregator;
template <class... Args>
class updates;
} // namespace apgas

namespace apgas::detail {

/// @brief The bytes of one buffered update: its arguments, back to back (as
/// write_bitwise_args writes them).
template <class... Args>
inline constexpr std::size_t k_update_bytes = (std::size_t{0} + ... + sizeof(Args));

/// @brief Reads one update's arguments from `at` (unaligned, as written).
template <class... Args>
[[gnu::always_inline]] inline std::tuple<Args...> read_update(const std::byte* at) noexcept {
  std::tuple<Args...> args;
  std::apply([&at](Args&... a) { ((std::memcpy(&a, at, sizeof a), at += sizeof a), ...); }, args);
  return args;
}

/// @brief F takes a whole batch (see updates) rather than one update at a time.
template <class F, class T, class... Args>
inline constexpr bool k_takes_batches = std::is_invocable_v<const F&, T&, updates<Args...>>;

/// @brief Text for a batch whose updates failed: how many, and what the first said.
std::string describe_failed_updates(std::size_t failed, std::size_t total,
                                    const std::exception_ptr& first);

/// @brief A batch of an aggregator where it arrives, run by the message handler (see the batch
/// message in active_messages.hpp): the target, then the updates' arguments. F takes the whole
/// batch, or each update runs F on the target and one that throws fails alone.
template <class F, class T, class... Args>
void run_update_batch(byte_reader& r) {
  constexpr std::size_t k_bytes = k_update_bytes<Args...>;
  const auto target = deserialize<global_ref<T>>(r);
  const std::span<const std::byte> items = r.read_span(r.remaining());
  if (items.size() % k_bytes != 0) [[unlikely]]
    r.fail("an aggregated batch of " + std::to_string(items.size()) +
           " bytes, not a whole "
           "number of " +
           std::to_string(k_bytes) + "-byte updates");
  T& object = *target; // throws bad_place unless the batch came to the target's home
  if constexpr (k_takes_batches<F, T, Args...>) {
    F{}(object, updates<Args...>(items));
  } else {
    std::size_t failed = 0;
    std::exception_ptr first;
    const std::byte* at = items.data();
    const std::byte* const end = at + items.size();
    for (; at != end; at += k_bytes) {
      try {
        std::tuple<Args...> args = read_update<Args...>(at);
        std::apply([&object](Args&... a) { F{}(object, a...); }, args);
      } catch (...) {
        if (failed++ == 0) first = std::current_exception();
      }
    }
    if (failed == 1) std::rethrow_exception(first);
    if (failed > 1)
      throw std::runtime_error(describe_failed_updates(failed, items.size() / k_bytes, first));
  }
}

/// @brief co_await make_aggregator<...>(): an aggregator bound to the caller's finish.
template <class F, class T, class... Args>
struct make_aggregator_awaiter {
  std::size_t bytes_per_place;
  finish_state* finish = nullptr;
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> caller) noexcept {
    require_apgas_caller<P>();
    finish = caller.promise().m_finish;
    return false;
  }
  aggregator<F, T, Args...> await_resume() const {
    return aggregator<F, T, Args...>(*finish, bytes_per_place);
  }
};
} // namespace apgas::detail
