// The halo exchange of distributed arrays (<apgas/dist_array.hpp>), without their types: each
// array has a channel at each of its places; an exchange sends one message per neighbour (a
// boundary's bytes, for one side of the neighbour's ghost region) and waits until its own
// neighbours' messages of the same exchange have arrived. A message that arrives early (its
// sender is one exchange ahead) waits in the channel. Messages of the "halo" kind, handled by
// places/src/halo_exchange.cpp.
//
// Message: array id (u64), exchange number (u64), side (u8), then the boundary's bytes.
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/await_required.hpp"
#include "apgas/task.hpp"

#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace apgas::detail {

using place_id = std::uint32_t;

struct halo_channel_state;

/// @brief One array's halo messages at this place. Thread-safety: one activity exchanges at a
/// time (the array's rule); messages arrive on any thread.
class halo_channel {
public:
  /// @param id the array's id, the same at every place (team::new_object_id).
  explicit halo_channel(std::uint64_t id);
  ~halo_channel();
  halo_channel(const halo_channel&) = delete;
  halo_channel& operator=(const halo_channel&) = delete;

  /// @brief Sends `data` to `to`, for side `side` of its ghost region, in exchange `exchange`.
  void send(place_id to, std::uint8_t side, std::uint64_t exchange,
            std::span<const std::byte> data);

  /// @brief co_await arrivals(e, n): until n messages of exchange e have arrived here.
  class arrivals_awaiter;
  APGAS_AWAIT_IT arrivals_awaiter arrivals(std::uint64_t exchange, std::size_t count);

  /// @brief The bytes that arrived for `side` in `exchange` (empty if none). pre: arrived.
  std::span<const std::byte> received(std::uint64_t exchange, std::uint8_t side) const;
  /// @brief Forgets what arrived for `exchange` (its ghosts are written).
  void release(std::uint64_t exchange);

private:
  std::shared_ptr<halo_channel_state> m_state;
  std::uint64_t m_id = 0;
};

class halo_channel::arrivals_awaiter {
public:
  arrivals_awaiter(halo_channel_state& s, std::uint64_t exchange, std::size_t count)
      : m_state(s), m_exchange(exchange), m_count(count) {}
  bool await_ready();
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    return suspend(caller.promise());
  }
  void await_resume() const noexcept {}

private:
  std::coroutine_handle<> suspend(promise_base& activity);
  halo_channel_state& m_state;
  std::uint64_t m_exchange;
  std::size_t m_count;
};

inline halo_channel::arrivals_awaiter halo_channel::arrivals(std::uint64_t exchange,
                                                             std::size_t count) {
  return arrivals_awaiter(*m_state, exchange, count);
}

} // namespace apgas::detail
