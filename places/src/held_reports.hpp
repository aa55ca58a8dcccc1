// The reports that proxies of a place hold for their home's ask, each with the time its hold
// runs out (a safeguard: the home always asks, see distributed_finish.hpp). A list with a lock,
// and its length readable without the lock so that a poll skips an empty list at the cost of
// one load.
#pragma once

#include "apgas/detail/finish_tally.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

namespace apgas::detail {

/// @brief Held reports by finish id. Thread-safety: any thread.
class held_reports {
public:
  using clock = std::chrono::steady_clock;

  /// @brief A proxy of finish `id` holds a report until `due`.
  void hold(const finish_id& id, clock::time_point due) {
    std::lock_guard guard(m_mutex);
    m_held.push_back(held{id, due});
    publish_size();
  }
  /// @brief The report of finish `id` left (asked for, or its hold ran out).
  void forget(const finish_id& id) {
    std::lock_guard guard(m_mutex);
    std::erase_if(m_held, [&](const held& h) { return h.id == id; });
    publish_size();
  }
  /// @brief Moves the ids whose hold ran out by `now` to `due`, unless another thread is at it
  /// (it then takes them).
  void take_due(clock::time_point now, std::vector<finish_id>& due) {
    std::unique_lock guard(m_mutex, std::try_to_lock);
    if (!guard.owns_lock()) return;
    std::erase_if(m_held, [&](const held& h) {
      if (now < h.due) return false;
      due.push_back(h.id);
      return true;
    });
    publish_size();
  }
  /// @brief True if some report is held. A hint for idle workers (relaxed); a poll that acts
  /// on it acquires (any_acquire).
  bool any() const noexcept { return m_size.load(std::memory_order_relaxed) != 0; }
  /// @brief As any(), ordered after the latest change of the list (pairs with publish_size).
  bool any_acquire() const noexcept { return m_size.load(std::memory_order_acquire) != 0; }

private:
  struct held {
    finish_id id;
    clock::time_point due;
  };
  void publish_size() noexcept { // pre: m_mutex held
    // release: a poll that sees the size (any_acquire) sees the list it counts.
    m_size.store(m_held.size(), std::memory_order_release);
  }

  std::mutex m_mutex; ///< guards m_held
  std::vector<held> m_held;
  std::atomic<std::size_t> m_size{0}; ///< m_held.size(), readable without the lock
};

} // namespace apgas::detail
