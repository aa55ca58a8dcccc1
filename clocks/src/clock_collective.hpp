// A clock phase on the collective path: once a phase ended stable (clock_tally.hpp: every place
// that reported did so once, changing no registration), the places that hold the clock's
// registrants end the following phases with one group allreduce per phase among themselves
// (collective_network::start_group: recursive doubling, messages straight on a communicator
// for groups), the pattern and cost of a team's barrier, instead of reports.
//
// Each member contributes a vote when its registrants of the phase have all resumed: whether
// its part of the phase was stable too (one report's worth, no base, nothing sent, every
// registrant completed and carried on), and its partial reduction. The votes combine in member
// order: all stable, and the reduction of all values. If all were stable, the phase ends at
// every member with that result, and the next phase takes the same path. If one was not (a
// clocked spawn at another place, a drop, a registration that arrived), no member may end the
// phase on the collective path: each sends the reports it took in the phase to the tallies, as
// the general protocol does, marked with the last phase that ended on the collective path, and
// the tallies skip to the phase (clock_tally::skip_to). So a phase ends on the collective path
// only if the general protocol would have ended it with the same registrants: the vote of a
// member that took a report is its report's, and a registration of the phase outside the
// members was sent by a member in the phase (not stable) or before (the phase before would not
// have been stable).
//
// Lanes: the group's messages carry tags of the clock's lane (a hash of its id). Two clocks on
// the collective path at once that share a place must not share a lane, so a place holds the
// lane for a clock (clock_lanes) before its report may say lane_ok, and frees it when the clock
// leaves the path.
#pragma once

#include "apgas/detail/clock_awaiters.hpp"
#include "apgas/detail/clock_tally.hpp"
#include "apgas/detail/collective_network.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace apgas::detail {

/// @brief A member's contribution to a phase on the collective path, and the combination of
/// several (bitwise: it is the group allreduce's value).
struct phase_vote {
  std::uint8_t stable = 1; ///< every vote combined so far was stable
  std::uint8_t has_value = 0;
  std::uint16_t unused = 0;
  std::uint32_t size = 0; ///< bytes of value
  std::int64_t code = 0;  ///< the reduction's combine function, as a code offset
  std::array<std::byte, k_max_reduce_bytes> value; ///< size bytes of it mean something

  /// @brief The bytes of a vote that mean something (group_call::used_bytes): none for a
  /// stable vote without a value (the empty vote, k_empty: a barrier's messages), 8 for one
  /// that is not stable, its head and value's size with a value.
  static std::size_t used_bytes(const void* vote) noexcept;
  static const phase_vote k_empty;

  /// @brief Makes it a member's vote, from its stability and partial reduction (a failed
  /// partial is not stable: the general protocol carries the failure).
  void set(bool stable, const clock_partial& partial) noexcept;
  /// @brief The phase's reduction result, as the general protocol would give it.
  void result_into(clock_partial& p) const noexcept;
};

/// @brief acc = acc combined with in (acc holds the lower members' votes): group_call::combine.
void combine_votes(std::byte* acc, const std::byte* in);

/// @brief The lanes this place's clocks hold for their group collectives. Thread-safety: any
/// thread.
class clock_lanes {
public:
  /// @brief The lane of clock `id` among `lanes` (pre: lanes > 0).
  static std::uint32_t lane_of(const clock_id& id, std::uint32_t lanes) noexcept;
  /// @brief Holds `lane` for `id`. @return false if another clock holds it here.
  bool hold(std::uint32_t lane, const clock_id& id);
  /// @brief Frees `lane` if `id` holds it.
  void free(std::uint32_t lane, const clock_id& id) noexcept;

private:
  std::mutex m_mutex;
  std::unordered_map<std::uint32_t, clock_id> m_held;
};

} // namespace apgas::detail
