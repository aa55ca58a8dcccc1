// Sleeping on a 32-bit word (Linux futex), with an optional timeout. Behind one file so that
// the scheduler's parking has one OS dependency.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace apgas::detail {

/// @brief Sleeps while `word` holds `expected`, at most `timeout` (zero: no limit). May return
/// spuriously; callers re-check their condition.
void futex_wait(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                std::chrono::nanoseconds timeout = std::chrono::nanoseconds::zero()) noexcept;
/// @brief Wakes up to `count` threads sleeping on `word`.
void futex_wake(std::atomic<std::uint32_t>& word, int count) noexcept;

} // namespace apgas::detail
