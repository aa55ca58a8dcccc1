// A stream of atomic blocks, for benchmarks: on its own (bench_atomic) or beside another
// workload that should not contend with it (a clocked loop: clocks never take the atomic lock).
#pragma once

#include <apgas/apgas.hpp>

#include <atomic>
#include <cstdint>

namespace apgas_bench {

/// @brief `iterations` dependent multiply-adds: a body of known length that the compiler keeps.
inline std::uint64_t busy_work(std::uint64_t x, unsigned iterations) noexcept {
  for (unsigned i = 0; i < iterations; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    asm volatile("" : "+r"(x)); // one step at a time: not folded into a closed form
  }
  return x;
}

/// @brief What the stream's blocks update: touched only inside atomic blocks.
struct atomic_counter {
  std::uint64_t blocks = 0; ///< atomic blocks run
  std::uint64_t mix = 0;    ///< what their bodies computed (keeps busy_work alive)
};

/// @brief One activity of a stream: `blocks` atomic blocks, each `body_work` iterations long.
inline apgas::task<> atomic_blocks(atomic_counter& c, std::uint64_t blocks, unsigned body_work) {
  for (std::uint64_t i = 0; i < blocks; ++i)
    co_await apgas::atomic([&c, body_work] {
      c.mix = busy_work(c.mix, body_work);
      ++c.blocks;
    });
}

/// @brief `activities` activities of `blocks_each` atomic blocks each, in a finish of their own.
inline apgas::task<> atomic_stream(atomic_counter& c, unsigned activities,
                                   std::uint64_t blocks_each, unsigned body_work) {
  co_await apgas::finish([&]() -> apgas::task<> {
    for (unsigned a = 0; a < activities; ++a)
      co_await apgas::async(atomic_blocks(c, blocks_each, body_work));
  });
}

/// @brief Atomic blocks until `stop` is set, for a stream beside another workload; returns how
/// many it ran. It never suspends: it keeps its worker until then.
inline apgas::task<std::uint64_t> atomic_stream_until(const std::atomic<bool>& stop,
                                                      atomic_counter& c, unsigned body_work) {
  std::uint64_t n = 0;
  // relaxed: a flag to stop at some point, not a publication.
  while (!stop.load(std::memory_order_relaxed)) {
    co_await apgas::atomic([&c, body_work] {
      c.mix = busy_work(c.mix, body_work);
      ++c.blocks;
    });
    ++n;
  }
  co_return n;
}

} // namespace apgas_bench
