// The distributed clock protocol: a protocol module with two message kinds.
//
// Messages (each sent at once: somebody waits for the phase):
//   clock report   clock id, first phase, clock_report     a place whose registrants of a phase
//                  have all resumed -> every place (up to --clock-all-to-all-places), else up
//                  the home's tree to the home
//   clock release  clock id, phase, result, last flag      the home -> down its tree to the
//                  places that reported in the phase (beyond the same limit): those whose
//                  registrants carry into the next phase, and those that keep the order of
//                  their reports until the phase has ended
// A registration travels with its activity (a clock_token argument of the remote async).
//
// Up to --clock-all-to-all-places places (16) every place tallies every report, so a phase ends at
// each place one message after its last resume anywhere (MPI_Barrier's dissemination algorithm
// takes log2 P messages): P - 1 messages per place and phase. Beyond, reports go up to the home
// and releases come down from it along a tree (tree_messaging.hpp): O(log P) hops each way,
// O(arity) messages per place and phase.
#pragma once

#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/protocol_module.hpp"
#include "apgas/detail/spin_lock.hpp"
#include "apgas/detail/tree_messaging.hpp"

#include "clock_collective.hpp"
#include "clock_proxy.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace apgas::detail {

class scheduler;

/// @brief Clock messages and phases of a place (relaxed counters: statistics only).
struct clock_counters {
  std::atomic<std::uint64_t> clocks_made{0};
  std::atomic<std::uint64_t> phases_ended{0};    ///< phase ends seen by this place's registrants
  std::atomic<std::uint64_t> reports_sent{0};    ///< clock report messages
  std::atomic<std::uint64_t> releases_sent{0};   ///< clock release messages
  std::atomic<std::uint64_t> advances_waited{0}; ///< advances that suspended
  /// Phases ended on the collective path by clocks whose proxies here are gone (the live ones
  /// count their own: a statistic kept off the path's every phase).
  std::atomic<std::uint64_t> phases_collective{0};
  std::atomic<std::uint64_t> collective_fallbacks{0}; ///< phases that left it (a vote unstable)
};

/// @brief The clock module of a place. Thread-safety: any thread.
class clock_protocol final : public protocol_module {
public:
  explicit clock_protocol(message_dispatcher& dispatcher);
  ~clock_protocol() override;

  /// @brief The module of this process's runtime. pre: a runtime exists.
  static clock_protocol& current();

  place_id here() const noexcept { return m_here; }
  place_id places() const noexcept { return m_places; }
  scheduler& sched() const noexcept { return m_sched; }
  /// @brief True if every place tallies every report (up to --clock-all-to-all-places).
  bool all_to_all() const noexcept { return m_all_to_all; }
  clock_counters& counters() noexcept { return m_counters; }

  /// @brief A new clock homed here, in phase `first_phase`, local until it first leaves
  /// (retained once).
  clock_proxy& make_clock(signal s, std::uint64_t first_phase);
  /// @brief The proxy here of a token's clock (created if needed), retained once.
  clock_proxy& adopt(const clock_token& t);
  /// @brief Frees the proxy of `id` if nothing refers to it and it owes nothing (called when
  /// its references fell to zero).
  void release_idle(const clock_id& id) noexcept;

  /// @brief Sends `r` to the tallying places (not here: the caller applied it here if it
  /// tallies). Then flushes.
  void send_report(const clock_proxy& px, const clock_report& r);
  /// @brief The home sends `end` to the places that reported in the phase.
  void send_release(const clock_proxy& px, const clock_phase_end& end);

  // ---- the collective path (clock_collective.hpp) ----
  /// @brief Lanes the network has for group collectives (0: no collective path).
  std::uint32_t group_lanes() const noexcept { return m_group_lanes; }
  clock_lanes& lanes() noexcept { return m_lanes; }
  /// @brief Starts the group allreduce of `vote` among `members` on `lane` (outside the
  /// proxy's lock), and flushes what the place buffered: the other members may wait for it.
  void start_collective(const std::vector<place_id>& members, std::size_t my_index,
                        std::uint32_t lane, phase_vote& vote, collective_done& done);
  /// @brief The network completed a proxy's allreduce that nobody waits for in place (called
  /// under the network's lock: only queues it, retained; process_completions completes it).
  void queue_completion(clock_proxy& px) noexcept;

  /// @brief Completes the queued allreduces (outside the network's lock: before each poll, or
  /// from an activity waiting in place).
  void process_completions() noexcept;
  /// @brief An advance that watches its phase's group allreduce (clock_proxy::resume): keeps
  /// the worker, if it has nothing else to do, testing the allreduce for up to --spin-us (a
  /// blocking MPI_Barrier's wait), and completes it; or hands the completion to the module's
  /// queue. @return true if the phase has ended.
  bool wait_in_place(clock_proxy& px, std::uint64_t phase);

private:
  /// Appends a report's fields (after its kind) to `out`.
  static void write_report(std::vector<std::byte>& out, const clock_proxy& px,
                           const clock_report& r);
  void on_report(place_id from, std::span<const std::byte> body);
  void on_release(place_id from, std::span<const std::byte> body);
  /// The proxy of `id` in the table, retained once; null if absent and not to be created.
  clock_proxy* find(const clock_id& id, const clock_token* create_from);
  std::string describe() const;
  /// The --stats section of this place (nothing if no clock reached it).
  std::string stats_table() const;
  /// Before each poll: completes what the network completed meanwhile.
  void complete_due() noexcept {
    // relaxed: a hint; queue_completion's lock orders the queue itself.
    if (m_completions.load(std::memory_order_relaxed) != 0) process_completions();
  }
  /// Idle workers keep polling while an allreduce is in flight or its completion is queued.
  bool collectives_pending() const noexcept {
    // relaxed: a hint for the idle policy (the network counts its collectives in flight).
    return m_completions.load(std::memory_order_relaxed) != 0 ||
           (m_net_collectives != nullptr && m_net_collectives->pending() != 0);
  }

  struct id_hash {
    std::size_t operator()(const clock_id& id) const noexcept {
      return std::hash<std::uint64_t>{}(id.serial * 0x9E3779B97F4A7C15ULL ^ id.home);
    }
  };

  message_dispatcher& m_dispatcher;
  scheduler& m_sched;
  place_id m_here;
  place_id m_places;
  bool m_all_to_all;      ///< places <= --clock-all-to-all-places
  tree_messaging& m_tree; ///< the home's reports and releases, beyond all-to-all
  message_kind m_kind_report;
  message_kind m_kind_release;
  clock_counters m_counters;
  std::atomic<std::uint64_t> m_next_serial{1}; ///< relaxed: only uniqueness matters
  mutable std::mutex m_table_mutex;            ///< guards m_table
  /// The clocks with registrants or a tally here, by id.
  std::unordered_map<clock_id, clock_proxy*, id_hash> m_table;

  collective_network* m_net_collectives; ///< the network's (null: no collective path)
  std::uint32_t m_group_lanes;
  clock_lanes m_lanes;
  spin_lock m_completed_lock;                ///< guards m_completed
  std::vector<clock_proxy*> m_completed;     ///< allreduces completed, not yet processed
  std::atomic<std::size_t> m_completions{0}; ///< m_completed's size (a hint read unlocked)
};

} // namespace apgas::detail
