// How the reply of an `at` finds the activity waiting for it: the request carries a token, an
// index into this table with a generation, not a pointer, so a reply whose token is damaged,
// stale or forged finds nothing instead of writing through a wild pointer.
#pragma once

#include "apgas/detail/spin_lock.hpp"

#include <cstdint>
#include <mutex>
#include <vector>

namespace apgas::detail {

class reply_sink;

/// @brief The `at` requests of a place waiting for their replies. Thread-safety: any thread.
class reply_table {
public:
  /// @brief Registers `sink` until its reply arrives. @return the token the request carries.
  std::uint64_t issue(reply_sink* sink) {
    std::lock_guard guard(m_lock);
    std::uint32_t index;
    if (m_free.empty()) {
      index = static_cast<std::uint32_t>(m_slots.size());
      m_slots.emplace_back();
    } else {
      index = m_free.back();
      m_free.pop_back();
    }
    slot& s = m_slots[index];
    s.sink = sink;
    ++s.generation; // a token of an earlier use of the slot no longer matches
    return (std::uint64_t{s.generation} << 32) | index;
  }
  /// @brief The sink of `token` (and forgets it), or null if it names no waiting request.
  reply_sink* take(std::uint64_t token) noexcept {
    const auto index = static_cast<std::uint32_t>(token);
    const auto generation = static_cast<std::uint32_t>(token >> 32);
    std::lock_guard guard(m_lock);
    if (index >= m_slots.size()) return nullptr;
    slot& s = m_slots[index];
    if (s.sink == nullptr || s.generation != generation) return nullptr;
    reply_sink* sink = s.sink;
    s.sink = nullptr;
    m_free.push_back(index); // capacity: the most requests ever waiting at once
    return sink;
  }

private:
  struct slot {
    reply_sink* sink = nullptr;
    std::uint32_t generation = 0;
  };
  spin_lock m_lock; ///< guards the slots and the free list (a few instructions each use)
  std::vector<slot> m_slots;
  std::vector<std::uint32_t> m_free;
};

} // namespace apgas::detail
