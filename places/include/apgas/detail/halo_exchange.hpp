// The halo exchange of distributed arrays (<apgas/dist_array.hpp>), without their types: each
// array has a channel at each of its places; an exchange sends one message per neighbour (the
// cells of a boundary, gathered straight into the message, for one side of the neighbour's
// ghost region) and waits until its own neighbours' messages of the same exchange are in its
// ghost cells. A message that arrives while its exchange is open here is scattered into the
// ghosts at once, by the thread that receives it; one that arrives early (its sender is one
// exchange ahead) waits in the channel, copied, until the exchange opens. Messages of the
// "halo" kind, handled by places/src/halo_exchange.cpp.
//
// Message: array id (u64), exchange number (u64), side (u8), then the cells' bytes.
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/await_required.hpp"
#include "apgas/task.hpp"

#include <array>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace apgas::detail {

using place_id = std::uint32_t;

/// @brief Cells of a part as bytes: `runs` runs of `run_bytes` bytes, the first at `first`, each
/// `stride` bytes after the one before (a row of a 2D part: one run; a column: one per row).
struct halo_region {
  std::byte* first = nullptr;
  std::size_t run_bytes = 0;
  std::size_t stride = 0;
  std::size_t runs = 0; ///< 0: no region (a side without a neighbour)

  std::size_t bytes() const noexcept { return run_bytes * runs; }
};

/// @brief The sides of a ghost region (1D arrays use the first two).
inline constexpr std::size_t k_halo_sides = 4;
using halo_ghosts = std::array<halo_region, k_halo_sides>;

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

  /// @brief Opens exchange `exchange`: its message for side s goes into ghosts[s] (one for
  /// each side whose region has runs), now for those that came early. pre: the previous
  /// exchange's arrivals were awaited; ghosts[s].bytes() is what the neighbour sends.
  void open(std::uint64_t exchange, const halo_ghosts& ghosts);
  /// @brief Sends the cells of `boundary` to `to`, for side `side` of its ghosts, in exchange
  /// `exchange`.
  void send(place_id to, std::uint8_t side, std::uint64_t exchange, const halo_region& boundary);

  /// @brief co_await arrivals(): until every message of the open exchange is in its ghosts
  /// (the exchange is then closed).
  class arrivals_awaiter;
  APGAS_AWAIT_IT arrivals_awaiter arrivals();

private:
  std::shared_ptr<halo_channel_state> m_state;
  std::uint64_t m_id = 0;
};

class halo_channel::arrivals_awaiter {
public:
  explicit arrivals_awaiter(halo_channel_state& s) : m_state(s) {}
  bool await_ready();
  template <class P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> caller) {
    require_apgas_caller<P>();
    return suspend(caller.promise());
  }
  void await_resume() const;

private:
  std::coroutine_handle<> suspend(promise_base& activity);
  halo_channel_state& m_state;
};

inline halo_channel::arrivals_awaiter halo_channel::arrivals() {
  return arrivals_awaiter(*m_state);
}

} // namespace apgas::detail
