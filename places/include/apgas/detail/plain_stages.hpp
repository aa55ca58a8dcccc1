// Plain runs staged per worker before they reach the coalescer. A stream of plain asyncs with
// bitwise arguments (a remote update each) would otherwise take the coalescer's per-destination
// lock and bookkeeping once per async; here a worker appends each async's arguments to a small
// buffer of its own (a slot per destination, direct-mapped), and a full slot goes on to the
// coalescer as one merged append.
//
// Finish counting is untouched: the sender counts each async before staging it (as before it
// was appended to the coalescer), so a staged async only waits longer in this place, as it
// would in a coalescing buffer; a finish never ends while one is staged.
//
// When staged arguments leave: when their slot is full, or is wanted for another run (another
// destination, finish, function or argument size); when their worker polls the network or
// flushes it (it looks for work, it goes idle, it waits for room); and, so that a worker busy
// in one long activity does not hold them, when any other thread polls or flushes once they
// have waited options::flush_us, as in the coalescer. The slot's lock makes those flushes
// safe; its owner takes it once per async, uncontended unless another thread flushes.
#pragma once

#include "apgas/detail/finish_links.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/spin_lock.hpp"
#include "apgas/detail/transport.hpp"
#include "apgas/detail/worker.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

namespace apgas::detail {

/// @brief The plain-run stages of one place's workers. Thread-safety: append from workers of
/// the place's scheduler (others are refused); the flushes from any thread.
class plain_stages {
public:
  /// @brief Sends a staged run: `count` asyncs of `id`'s finish whose `args_bytes` bytes of
  /// arguments each are `bytes`, to `to` (one merged append to the coalescer). Must not call
  /// back into the stages' append (it may poll, and so flush).
  using hand_on_fn = void (*)(void* context, place_id to, const finish_id& id, std::int64_t code,
                              std::uint32_t args_bytes, const std::byte* bytes,
                              std::uint32_t count);

  /// @brief Argument bytes a slot holds: a run leaves in pieces of up to this size.
  static constexpr std::size_t k_slot_bytes = 1024;
  /// @brief Destinations staged at once per worker (slot = destination mod this): 32 KiB per
  /// worker, and runs to up to 32 places never evict one another.
  static constexpr std::size_t k_slots = 32;

  plain_stages(const scheduler& sched, std::chrono::microseconds flush_after, hand_on_fn hand_on,
               void* context);

  /// @brief Staging on or off (off: every append is refused, so asyncs go to the coalescer
  /// alone). Follows the transport's coalescing switch.
  void set_enabled(bool on) noexcept {
    // relaxed: appends read it as they come; one that misses the change by a few asyncs is as
    // good as one made just before the call (as the coalescer's switch).
    m_enabled.store(on, std::memory_order_relaxed);
  }

  /// @brief Stages one async of run (`to`, `id`, `code`, `args_bytes`), its arguments written
  /// by `write_args(at, args)`. pre: it was counted with its finish.
  /// @return false (nothing done) unless the caller is a worker of this place and staging is
  /// on: the caller then sends it itself.
  [[gnu::always_inline]] bool append(place_id to, const finish_id& id, std::int64_t code,
                                     std::size_t args_bytes, transport::message_writer write_args,
                                     const void* args) {
    const worker* w = t_worker;
    // relaxed: see set_enabled.
    if (w == nullptr || &w->sched() != m_sched || args_bytes > k_slot_bytes ||
        !m_enabled.load(std::memory_order_relaxed)) [[unlikely]]
      return false;
    stage& st = m_stages[w->index()];
    std::lock_guard guard(st.lock);
    const std::size_t i = to % k_slots;
    slot& s = st.slots[i];
    // The code names the function and its argument types, so the argument size comes with it.
    if (s.id != &id || s.to != to || s.code != code) [[unlikely]] // a free slot's id is null
      start_run_locked(st, i, to, id, code, args_bytes);
    write_args(st.bytes[i] + s.used, args);
    s.used += static_cast<std::uint32_t>(args_bytes);
    if (s.used + args_bytes > k_slot_bytes) [[unlikely]]
      hand_on_locked(st, i);
    return true;
  }

  /// @brief Sends everything the calling thread's stage holds (if it is a worker of this
  /// place), and what other workers' stages have held for options::flush_us or more. Before
  /// every poll of the place's network.
  void flush_polled() noexcept { flush(false); }
  /// @brief As flush_polled, and every other stage too (a flush of the network: its caller
  /// goes idle or waits, and nobody else may send for a while).
  void flush_all() noexcept { flush(true); }

private:
  /// A slot's run (its bytes are apart, so that indexing either is a shift).
  struct slot {
    place_id to = 0;
    std::uint32_t args_bytes = 0;
    std::uint32_t used = 0; ///< bytes staged
    /// Its finish's link, alive while counted asyncs are staged; null while the slot is free.
    const finish_id* id = nullptr;
    std::int64_t code = 0;
  };
  /// One worker's. alignas(64): written by its own worker, so no false sharing between two.
  struct alignas(64) stage {
    spin_lock lock;               ///< guards everything below
    std::uint32_t busy_slots = 0; ///< slots in use (id != null)
    /// When the first of the staged asyncs was staged (steady clock, ns), 0 if none: other
    /// threads read it without the lock to find stages that have waited long enough.
    std::atomic<std::int64_t> since_ns{0};
    slot slots[k_slots];
    alignas(16) std::byte bytes[k_slots][k_slot_bytes];
  };

  /// Hands on what slot i holds, if anything, and starts run (to, id, code, args_bytes) in it.
  void start_run_locked(stage& st, std::size_t i, place_id to, const finish_id& id,
                        std::int64_t code, std::size_t args_bytes) noexcept;
  /// Sends what slot i holds (id != null) and frees it.
  void hand_on_locked(stage& st, std::size_t i) noexcept;
  void flush_stage_locked(stage& st) noexcept;
  void flush(bool all) noexcept;

  const scheduler* m_sched;
  const unsigned m_stage_count;
  const std::int64_t m_flush_after_ns;
  hand_on_fn m_hand_on;
  void* m_context;
  std::atomic<bool> m_enabled{true};
  /// Stages holding anything: a hint that lets a poll skip the clock and the scan when none do.
  /// Changed under stage locks; read without one (a stale value delays or wastes one scan).
  std::atomic<unsigned> m_busy_stages{0};
  std::unique_ptr<stage[]> m_stages; ///< one per worker, by worker index
};

} // namespace apgas::detail
