/// @file The messages a place has sent and received, as numbers: a snapshot of one place
/// (local_message_counts) or the sum over every place (total_message_counts). The counts run
/// from the runtime's start; the difference of two snapshots gives what happened in between.
///
///     const apgas::message_counts before = co_await apgas::total_message_counts();
///     co_await work();
///     const apgas::message_counts m = co_await apgas::total_message_counts() - before;
///     fmt::print("{} activities sent in {} MPI messages\n", m.activities_sent,
///                m.mpi_messages_sent);
#pragma once

#include "apgas/task.hpp"

#include <cstdint>
#include <type_traits>

namespace apgas {

/// @brief Message counts of one place, or their sum over places. Traffic to the place itself
/// counts as logical messages only: it never becomes an MPI message.
struct message_counts {
  std::uint64_t activities_sent = 0;      ///< async_at and at requests
  std::uint64_t at_replies_sent = 0;      ///< values (or errors) of at bodies sent back
  std::uint64_t finish_reports_sent = 0;  ///< finish control: a place's report to the home
  std::uint64_t finish_asks_sent = 0;     ///< finish control: the home asks for a held report
  std::uint64_t finish_cleanups_sent = 0; ///< finish control: the home releases a place
  /// Held finish reports sent unasked, their hold expired (see options::report_delay_us):
  /// 0 unless the home's asks come late.
  std::uint64_t finish_holds_expired = 0;
  std::uint64_t distributed_finishes = 0; ///< finishes homed here that went remote
  /// Messages of the runtime (activities, replies, finish control, ...), counted when queued.
  std::uint64_t logical_messages_sent = 0;
  /// Logical messages handled; a merged stream of plain asyncs counts once.
  std::uint64_t logical_messages_received = 0;
  std::uint64_t mpi_messages_sent = 0;     ///< network messages the logical ones left in
  std::uint64_t mpi_messages_received = 0; ///< network messages from other places
  std::uint64_t bytes_sent = 0;            ///< network bytes, frames included
  std::uint64_t bytes_received = 0;        ///< network bytes, frames included
  std::uint64_t backpressure_waits = 0;    ///< sends that waited for room in the network
  /// Messages between two other places that went through this one (beyond --route-above
  /// places): in its network messages and bytes, not in its logical ones.
  std::uint64_t messages_forwarded = 0;
  /// Aggregated updates for other places that this one sorted into batches, as the
  /// intermediate of routed aggregation (their batches count as activities sent here).
  std::uint64_t updates_relayed = 0;

  /// @brief Finish control messages: reports, asks and cleanups.
  std::uint64_t finish_control_sent() const noexcept {
    return finish_reports_sent + finish_asks_sent + finish_cleanups_sent;
  }

  message_counts& operator+=(const message_counts& o) noexcept;
  /// @brief What happened between two snapshots. pre: `earlier` was taken before `later`, of
  /// the same places (counts only grow).
  friend message_counts operator-(message_counts later, const message_counts& earlier) noexcept;
  friend bool operator==(const message_counts&, const message_counts&) = default;
};

// Crosses places as the value of an `at`: copied byte for byte.
static_assert(std::is_trivially_copyable_v<message_counts>);

/// @brief This place's counts so far. Thread-safety: any thread, while a runtime exists; a
/// read while messages flow may be a little behind, a read after they stopped is exact.
/// @throws std::logic_error if no runtime exists.
message_counts local_message_counts();

/// @brief The counts of every place, summed. Reading costs messages itself: one `at` to every
/// other place, all at once (a request and a reply each, no finish control), then this place
/// reads its own. The same messages every time, so two reads in a row measure the cost of one,
/// to subtract.
task<message_counts> total_message_counts();

} // namespace apgas
