/// @file A flat loop: n asyncs started one after the other by one loop under one finish, X10's
/// `finish for (i in 0..n-1) async body(i)`. Each writes out[i] = loop_value(i). The case that
/// separates the policies: help-first queues every child before the loop ends (a frame each,
/// n of them on one worker), work-first runs each child at once (one at a time), adaptive
/// queues up to the deque bound and runs the rest at once.
#pragma once

#include <apgas/core.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <optional>

namespace apgas_apps {

/// @brief What loop iteration i computes (a hash of i: the loop's result can be checked).
inline std::uint32_t loop_value(std::uint64_t i) {
  i ^= i >> 33;
  i *= 0xff51afd7ed558ccdULL;
  i ^= i >> 33;
  return static_cast<std::uint32_t>(i);
}

/// @brief The frames of children the loop has started but that have not begun to run, at
/// most, over the loop: an optional count (it costs an atomic increment per child).
struct loop_frames {
  std::atomic<std::uint64_t> started{0}; ///< children that began to run
  std::uint64_t peak = 0;                ///< the most spawned and not yet started, seen by the loop
};

inline apgas::task<> loop_body(std::uint32_t* out, std::uint64_t i, loop_frames* frames) {
  // relaxed: a count for the loop's estimate, read when the finish has ended or by the loop
  // (which needs no order with the writes of out).
  if (frames != nullptr) frames->started.fetch_add(1, std::memory_order_relaxed);
  out[i] = loop_value(i);
  co_return;
}

/// @brief The loop under a finish of policy `p` (the run's default if none); `frames`
/// (optional) measures the unstarted children it holds.
inline apgas::task<> flat_loop(std::uint32_t* out, std::uint64_t n, loop_frames* frames = nullptr,
                               std::optional<apgas::policy> p = std::nullopt) {
  auto body = [out, n, frames]() -> apgas::task<> {
    for (std::uint64_t i = 0; i < n; ++i) {
      if (frames != nullptr) // relaxed: see loop_body
        frames->peak = std::max(frames->peak, i - frames->started.load(std::memory_order_relaxed));
      co_await apgas::async(loop_body(out, i, frames));
    }
  };
  if (p) co_await apgas::finish(*p, body);
  else co_await apgas::finish(body);
}

/// @brief The sequential reference.
[[gnu::noinline]] inline void flat_loop_seq(std::uint32_t* out, std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) out[i] = loop_value(i);
}

/// @brief A sum of what the loop wrote, to compare runs.
inline std::uint64_t loop_checksum(const std::uint32_t* out, std::uint64_t n) {
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < n; ++i) sum += out[i];
  return sum;
}

} // namespace apgas_apps
