// Relayed aggregator batches: how an apgas::aggregator keeps O(sqrt P) buffers once routing is
// on (options::route_above, routing.hpp). For a place outside its row and its column of the
// grid, an aggregator buffers the update, with its target, in one relay buffer per
// intermediate place (the place the transport would route through: in the sender's row, and
// in the destination's column). A full relay buffer goes to the intermediate as one relay
// batch. There this file's batch_relay sorts its updates into batches per destination and
// holds each batch, until it is full, has waited options::flush_us, or the place goes idle, so
// that the updates of every place of the intermediate's row for one place of its column share
// batches. A held batch then leaves as an ordinary aggregator batch (run where it arrives, see
// active_messages.hpp), and the destination cannot tell it from a direct one.
//
// Relay batch (message kind "relay batch"): finish id, code offset (the batch function, as a
// batch's), update bytes u, hold bytes h (the sender's bytes_per_place: a held batch leaves
// once it holds that much), target count n, the n targets (a global_ref's 16 bytes each, its
// place first), then records of 4 + u bytes: the index of the update's target in that table
// and the update's arguments. (A target per record would make a relayed update of 8 bytes
// cost 24 on the first hop; most updates of a buffer go to a few targets, one per place.)
//
// Why the finish still sees every update until it ran: the relay batch is an activity of its
// finish, sent from the source to the intermediate and counted so by both, like any batch.
// Each held batch is one more strand of that finish's part at the intermediate, opened while
// a relay batch that feeds it is still running (so the part's count never touches zero in
// between) and ended only after the held batch was counted as sent to its destination and
// handed to the transport. So while an update is held, the intermediate's part is busy and
// does not report; once it leaves, the finish counts it in flight to its destination, as any
// batch, until the destination runs it. Each record is appended to exactly one held batch,
// and each held batch is sent exactly once (it is taken out of the table, under its lock,
// before it is sent).
#pragma once

#include "apgas/detail/active_messages.hpp"
#include "apgas/detail/finish_tally.hpp"
#include "apgas/detail/transport.hpp"

#include "distributed_finish.hpp"
#include "routing.hpp"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace apgas::detail {

/// @brief The intermediate's side of relayed aggregator batches (see the top of this file).
/// Thread-safety: take from the handler; the flushes from any thread.
class batch_relay {
public:
  /// @brief The bytes of a record's target index.
  static constexpr std::size_t k_index_bytes = sizeof(std::uint32_t);

  /// @param batch_kind the message kind of an aggregator batch (what a held batch is sent as).
  /// @param flush_after how long a held batch may wait for more updates while the place polls.
  batch_relay(distributed_finish& finish, transport& net, place_id here, place_id places,
              std::uint32_t route_above, message_kind batch_kind,
              std::chrono::microseconds flush_after);
  batch_relay(const batch_relay&) = delete;
  batch_relay& operator=(const batch_relay&) = delete;

  /// @brief Where an aggregator's batch for `to` goes first: the intermediate place of the
  /// routing grid, or `to` itself when it is sent direct (routing off, or `to` in this place's
  /// row or column).
  place_id hop(place_id to) const noexcept { return m_grid.next_hop(m_here, to); }

  /// @brief A relay batch of finish `id` from `from`: sorts `records` (a whole number of
  /// k_index_bytes + update_bytes, indices into `targets`) into held batches, and sends those
  /// that are full. Runs as an activity of the finish that ends here. @throws transport_error
  /// if a target is not a place or is this place, or an index names no target (a damaged
  /// message: a sender relays only for others).
  void take(place_id from, const finish_id& id, std::int64_t code, std::uint32_t update_bytes,
            std::uint32_t hold_bytes, std::span<const std::byte> targets,
            std::span<const std::byte> records);

  /// @brief Sends the held batches that have waited options::flush_us or more (before each poll).
  void flush_aged() noexcept { flush(false); }
  /// @brief Sends every held batch (before each flush of the network: its caller goes idle).
  void flush_all() noexcept { flush(true); }
  /// @brief One line per finish whose updates this place holds (for a hung run's dump).
  std::string describe() const;
  /// @brief Updates relayed (statistics).
  std::uint64_t updates_relayed() const noexcept {
    return m_updates_relayed.load(std::memory_order_relaxed);
  }
  /// @brief Held batches sent on (each a batch message to its destination).
  std::uint64_t batches_sent() const noexcept {
    return m_batches_sent.load(std::memory_order_relaxed);
  }

private:
  /// A batch being held for one destination: a framed batch message (head, target, updates).
  struct held_batch {
    std::vector<std::byte> bytes; ///< empty while nothing is held
    proxy* px = nullptr;          ///< the finish's part here; a strand of it is open meanwhile
    place_id to = 0;
    std::int64_t since_ns = 0; ///< when its first update came
  };
  /// The held batches of one finish and batch function, by the destination's place in the
  /// intermediate's row and column (relay_slot).
  struct group {
    std::vector<held_batch> slots;
    std::size_t held = 0; ///< slots holding a batch
  };
  struct group_key {
    finish_id id;
    std::int64_t code;
    friend bool operator==(const group_key&, const group_key&) = default;
  };
  struct group_key_hash {
    std::size_t operator()(const group_key& k) const noexcept {
      return finish_id_hash{}(k.id) ^ static_cast<std::size_t>(k.code) * 0x9E3779B97F4A7C15ULL;
    }
  };

  /// Where a batch for `to` (a place of this place's row or column) is held in a group.
  std::size_t relay_slot(place_id to) const noexcept;
  /// Starts holding a batch for `to` with `target` in `h` (a new strand of `px`).
  /// Its buffer gets room for `full` bytes at once.
  void start_held(held_batch& h, proxy& px, place_id to, const finish_id& id, std::int64_t code,
                  const std::byte* target, std::size_t full);
  /// Moves `h` (of `g`) to `out`, to be sent, and frees its slot.
  void release_locked(group& g, held_batch& h, std::vector<held_batch>& out);
  /// Moves the held batches due (all, or those older than flush_us) to `out`, under the lock.
  void take_due_locked(bool all, std::int64_t now, std::vector<held_batch>& out);
  /// Counts each batch as sent by its finish's part here, sends it, and ends its strand.
  void send(std::vector<held_batch>& batches) noexcept;
  void flush(bool all) noexcept;

  distributed_finish& m_finish;
  transport& m_net;
  const place_id m_here;
  const place_id m_places;
  const route_grid m_grid;
  const place_id m_columns; ///< of the routing grid
  const place_id m_rows;
  const message_kind m_batch_kind;
  const std::int64_t m_flush_after_ns;

  mutable std::mutex m_mutex; ///< guards m_groups and m_spare
  std::unordered_map<group_key, group, group_key_hash> m_groups;
  std::vector<std::vector<std::byte>> m_spare; ///< buffers of sent batches, for reuse
  /// take's: the slot of each target of the relay batch (handler context only).
  std::vector<std::size_t> m_target_slots;
  /// Batches held, and when the oldest of them started (0: none): hints that let a poll skip
  /// the clock and the lock when nothing is held, written under the lock (relaxed: a stale
  /// value delays a flush by one poll, or costs one look).
  std::atomic<std::size_t> m_held_batches{0};
  std::atomic<std::int64_t> m_oldest_ns{0};
  std::atomic<std::uint64_t> m_updates_relayed{0}; ///< statistics (relaxed)
  std::atomic<std::uint64_t> m_batches_sent{0};
};

} // namespace apgas::detail
