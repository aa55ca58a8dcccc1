// The steady clock in nanoseconds as one integer: what hold and flush deadlines compare (an
// integer fits an atomic that other threads read as a hint).
#pragma once

#include <chrono>
#include <cstdint>

namespace apgas::detail {

/// @brief std::chrono::steady_clock::now() in nanoseconds since its epoch.
inline std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

} // namespace apgas::detail
