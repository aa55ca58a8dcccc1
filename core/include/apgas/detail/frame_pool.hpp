// Coroutine frames come from per-thread size-class free lists instead of one malloc per task.
// A frame freed on another thread than the one that allocated it (a stolen continuation that
// completes elsewhere) goes to the freeing thread's list; each list is capped so that memory
// drifting between threads stays bounded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace apgas::detail {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
// Under sanitizers, plain operator new so that use-after-free and races on frames are seen.
inline constexpr bool k_frame_pool_enabled = false;
#else
inline constexpr bool k_frame_pool_enabled = true;
#endif

/// @brief Per-worker cache of coroutine frames, by 64-byte size class.
/// Thread-safety: used only by the worker thread that owns it.
class frame_pool {
public:
  static constexpr std::size_t k_granule = 64;
  static constexpr std::size_t k_classes = 16;        // frames up to 1 KiB are pooled
  static constexpr std::uint32_t k_max_cached = 4096; // per class and thread

  frame_pool() = default;
  /// @brief A pool that caches nothing: every allocation goes to operator new and every free
  /// to operator delete (its lists stay empty and its counts stay at the cap). It is never
  /// written to, so every thread that is not a worker can share one (see t_frame_pool).
  struct passthrough_t {};
  explicit constexpr frame_pool(passthrough_t) noexcept {
    for (std::uint32_t& count : m_counts) count = k_max_cached;
  }
  frame_pool(const frame_pool&) = delete;
  frame_pool& operator=(const frame_pool&) = delete;
  ~frame_pool();

  [[gnu::always_inline]] void* allocate(std::size_t bytes) {
    const std::size_t c = class_of(bytes);
    if (c < k_classes) {
      if (free_block* b = m_heads[c]) {
        m_heads[c] = b->next;
        --m_counts[c];
        return b;
      }
      return ::operator new((c + 1) * k_granule);
    }
    return ::operator new(bytes);
  }

  [[gnu::always_inline]] void deallocate(void* p, std::size_t bytes) noexcept {
    const std::size_t c = class_of(bytes);
    if (c < k_classes && m_counts[c] < k_max_cached) {
      auto* b = static_cast<free_block*>(p);
      b->next = m_heads[c];
      m_heads[c] = b;
      ++m_counts[c];
      return;
    }
    ::operator delete(p);
  }

  /// @brief Bytes really allocated for a frame of `bytes` (its class size when pooled).
  static std::size_t block_size(std::size_t bytes) noexcept {
    const std::size_t c = class_of(bytes);
    return c < k_classes ? (c + 1) * k_granule : bytes;
  }

private:
  struct free_block {
    free_block* next;
  };
  static std::size_t class_of(std::size_t bytes) noexcept { return (bytes - 1) / k_granule; }

  free_block* m_heads[k_classes] = {};
  std::uint32_t m_counts[k_classes] = {};
};

/// @brief The pool shared (read only) by threads that are not workers.
inline constinit frame_pool g_passthrough_frame_pool{frame_pool::passthrough_t{}};

/// @brief The pool of the worker running on this thread, or the passthrough pool on other
/// threads. Never null, so that a frame allocation costs no test of it; a pointer with
/// constant initialisation, so that an access costs no TLS guard.
///
/// A frame allocated off a worker takes its whole size class from operator new: it may be
/// freed on a worker, whose pool will hand the block out again for any frame of that class.
inline thread_local constinit frame_pool* t_frame_pool = &g_passthrough_frame_pool;

[[gnu::always_inline]] inline void* allocate_frame(std::size_t bytes) {
  if constexpr (k_frame_pool_enabled) return t_frame_pool->allocate(bytes);
  return ::operator new(bytes);
}

[[gnu::always_inline]] inline void deallocate_frame(void* p, std::size_t bytes) noexcept {
  if constexpr (k_frame_pool_enabled) t_frame_pool->deallocate(p, bytes);
  else ::operator delete(p);
}

} // namespace apgas::detail
