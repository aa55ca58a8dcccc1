// The counting of a distributed clock's phases, without transport or scheduler: what a place
// reports when its registrants have all ended a phase, and how a tallying place decides that a
// phase has ended everywhere. The protocol around it is clocks/src/clock_protocol.hpp.
//
// A phase ends when every activity registered in it has resumed or dropped. That is a
// termination problem in each phase, and it is counted the way the distributed finish counts
// activities (vector counting flushed on local quiet): each place reports, once its registrants
// of the phase have all resumed or dropped, how many did so since its last report (completed),
// how many of those stay registered into the next phase (carried), and how many new activities
// its registrants registered at each other place (sent). A tally keeps, per phase and place,
//   pending = base + carried in from the previous phase + sent there - completed there,
// and the phase has ended when every pending count is zero and the phase before it has ended.
//
// Why never early. A registration travels only with an activity that a registrant spawns
// before it resumes (a resumed clock cannot be transmitted), and it is counted as sent in the
// spawner's place's report, which is taken only once that registrant (and every other one of
// the phase there) has resumed. So while any registrant of phase p has not resumed, or any
// registration of p is in flight, some pending count of p is positive: its own place's, or the
// one of the place that sent it and has not reported it yet (that place is itself pending
// until it reports). The reports of one place for one phase are applied in the order they
// were taken (a sequence number; one taken later can arrive first when two threads send), and
// those of different places may arrive in any order: a count below zero keeps the phase open
// too. This holds for the reports applied so far only if the tally knows every registrant that
// no report sent: those carried from the previous phase, known once it has ended (hence phases
// end in order), and in the first phase the home's registrants from before the clock left it
// (its `base`, in its first report: the first phase waits for it).
//
// The result of a phase's reduction is folded in a canonical order (by place, then by report)
// so that every tallying place computes the same value, floating point included.
//
// Stable phases. A phase in which every place that reported did so once, with no base and
// nothing sent, each of its registrants completing and carrying on (completed = carried =
// what it carried in), changed no registration: the next phase has the same registrants at the
// same places. The tally says so at the phase's end (clock_phase_end::stable), and the places
// then end the next phases among themselves with a group allreduce (the collective path, in
// clock_proxy.hpp) while each of them stays stable, without reports. The first phase in which
// one is not ends here again: its places report it, each saying which phase last ended on the
// collective path, and the tally skips the phases it has not seen to that one, with the same
// carries as the last phase it saw (the phases in between were stable: nothing changed).
#pragma once

#include "apgas/clock_reduce.hpp"

#include <array>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

namespace apgas::detail {

using place_id = std::uint32_t;

/// @brief Why a phase's reduction has no value: its contributions disagree in operation or
/// type, or the operation threw (`error`: its exception, as the place that reads it can
/// rethrow it).
struct clock_failure {
  bool mismatch = false;
  std::exception_ptr error;
};

/// @brief A place's partial reduction of one report (empty: nobody contributed). The value is
/// inline, so that phases make and move many of them without allocating; a failure (rare) is
/// shared.
struct clock_partial {
  combine_fn combine = nullptr;
  std::uint32_t size = 0;
  std::array<std::byte, k_max_reduce_bytes> value;
  std::shared_ptr<const clock_failure> failure; ///< set: the reduction failed

  bool empty() const noexcept { return combine == nullptr && failure == nullptr; }
  /// @brief Empties it (without touching the value's bytes, which nobody reads then).
  void clear() noexcept {
    combine = nullptr;
    size = 0;
    failure.reset();
  }
  bool failed() const noexcept { return failure != nullptr; }
  /// @brief Folds one contribution (`bytes` bytes at `v`, combined by `op`) in. A failed
  /// partial stays failed; another operation or size, or an `op` that throws, fails it.
  void fold(combine_fn op, const std::byte* v, std::uint32_t bytes) noexcept;
  /// @brief Folds another partial in (after this one's contributions).
  void fold(const clock_partial& other) noexcept;
  /// @brief Throws what made it fail. pre: failed().
  [[noreturn]] void rethrow() const;
  /// @brief Marks it failed: a mismatch, or `error` (the operation's exception).
  void fail(bool mismatch, std::exception_ptr error) noexcept;
};

/// @brief What a place tells the tallying places when its registrants of a phase have all
/// resumed or dropped.
struct clock_report {
  place_id from = 0;
  std::uint64_t first_phase = 0; ///< the phase in which the clock first left its home
  std::uint64_t phase = 0;
  std::uint64_t seq = 0;       ///< 0, 1, ... per place and phase
  std::uint64_t base = 0;      ///< registrants present before the clock left the home (once)
  std::uint64_t completed = 0; ///< registrants that resumed or dropped since the last report
  std::uint64_t carried = 0;   ///< of those, registrants that stay into the next phase
  std::vector<std::pair<place_id, std::uint64_t>> sent; ///< registrations sent, per place
  clock_partial partial;
  /// The place holds the clock's lane for group collectives (clock_protocol.hpp): a phase that
  /// ends stable may move to the collective path only if every place that reported holds it.
  bool lane_ok = false;
  /// The last phase its place knows to have ended on the collective path (0: none): a tally
  /// that has not heard of those phases skips them (see clock_tally::apply).
  std::uint64_t last_collective = 0;
};

/// @brief A phase that has ended everywhere, with its reduction's result.
struct clock_phase_end {
  std::uint64_t phase = 0;
  clock_partial result;
  /// Places that reported in the phase (the home beyond --clock-all-to-all-places tells them
  /// of its end): those whose registrants stay into the next phase wait for it, and the others
  /// keep the order of their reports of the phase until they know it has ended.
  std::vector<place_id> reported_at;
  /// No registrant stays: the clock is over.
  bool last = false;
  /// The phase was stable: every place that reported did so once, with no base, nothing
  /// sent, every registrant it carried in completed and carried on, and the clock's lane held.
  /// The next phases then end on the collective path among `members` until one is not.
  bool stable = false;
  std::vector<place_id> members; ///< stable: the places that reported, ascending
};

/// @brief The tally of one clock at one tallying place. Thread-safety: none (the caller's lock).
/// Counts per place are dense (indexed by place, grown to the largest place seen) and the open
/// phases' states are reused, so a phase in steady state allocates nothing.
class clock_tally {
public:
  /// @param first_phase the phase in which the clock first left its home: phases end in order
  /// from there.
  /// @param list_reporters fill clock_phase_end::reported_at (the home that releases the
  /// places).
  explicit clock_tally(std::uint64_t first_phase, bool list_reporters = true)
      : m_oldest(first_phase), m_list_reporters(list_reporters) {}

  /// @brief Applies `r`, or holds it back until the earlier reports of its place and phase
  /// are in. Appends the phases that ended to `ended`, in order (a phase whose reductions
  /// disagree, or whose operation throws, ends with a failed result).
  void apply(const clock_report& r, std::vector<clock_phase_end>& ended);
  /// @brief The oldest phase that has not ended.
  std::uint64_t oldest_open_phase() const noexcept { return m_oldest; }
  /// @brief True once a phase ended with no registrant carried (see clock_phase_end::last).
  bool over() const noexcept { return m_over; }
  /// @brief Places with a non-zero pending count in the oldest open phase (diagnostics).
  std::vector<std::pair<place_id, std::int64_t>> waiting_for() const;

private:
  struct per_place {
    std::int64_t pending = 0;
    std::uint64_t next_seq = 0;
    std::uint64_t carried = 0;    ///< into the next phase
    std::uint64_t carried_in = 0; ///< from the phase before
    bool stable = false;          ///< its one report so far left its registrations as they were
  };
  struct phase_state {
    std::vector<per_place> places;  ///< by place id, grown on demand
    std::size_t nonzero = 0;        ///< places whose pending count is not zero
    std::vector<clock_report> held; ///< arrived before an earlier one of their place
    /// (place, seq, partial): folded in (place, seq) order when the phase ends.
    std::vector<std::pair<std::pair<place_id, std::uint64_t>, clock_partial>> partials;
    bool touched = false; ///< a report or a carry reached it (an untouched phase never ends)
    per_place& at(place_id p) {
      if (p >= places.size()) places.resize(std::size_t{p} + 1);
      return places[p];
    }
    void reset() noexcept; ///< for reuse: empty, capacities kept
  };
  /// The state of a phase already in the ring (reserve_through it first).
  phase_state& slot(std::uint64_t phase) noexcept { return m_ring[phase & (m_ring.size() - 1)]; }
  /// Makes room in the ring for the phases up to `phase` (it may move every phase's state).
  void reserve_through(std::uint64_t phase);
  void apply_in_order(const clock_report& r, phase_state& ph);
  /// Phases m_oldest .. phase - 1 ended on the collective path: phase takes over the carries
  /// of m_oldest, which no report reached.
  void skip_to(std::uint64_t phase);
  /// True if an open phase before `phase` has a report (it did not end on the collective path).
  bool reports_before(std::uint64_t phase) const;
  static void adjust(phase_state& ph, place_id p, std::int64_t delta);
  bool try_end_oldest(std::vector<clock_phase_end>& ended);

  /// The open phases from m_oldest on, phase p at p mod the ring's size (a power of two).
  std::vector<phase_state> m_ring;
  std::size_t m_open = 0; ///< phases from m_oldest on that a report or a carry reached
  std::uint64_t m_oldest;
  /// Reports that skip to their phase once the phase before the collective path ends here.
  std::vector<clock_report> m_waiting_for_path;
  bool m_list_reporters;
  bool m_base_known = false; ///< the home's first report (with its base) has been applied
  bool m_over = false;
};

} // namespace apgas::detail
