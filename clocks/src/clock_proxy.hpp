// The state of one clock at one place: the registrants here, the phase they are in, and (once
// the clock has left its home) what this place has not reported yet and its tally.
//
// A clock starts at its home, local: the last registrant to resume ends the phase, wakes the
// waiters and nothing is sent (uClocks' three properties: one lock per clock, never a global
// one; an advance suspends the activity, never its worker; O(1) work per registrant and
// phase). When a registrant first spawns a clocked activity at another place, the clock
// becomes distributed from that phase on: every place with registrants reports each time they
// have all resumed (clock_tally.hpp), and a phase ends at a place when its tally says so (up
// to --clock-all-to-all-places places every place tallies every report: the end is known one
// message after the last resume) or when the home's release arrives (beyond: the home alone
// tallies).
//
// Registrants of a place are in the place's current phase p, or already in p + 1: an activity
// registered by a place that has seen p end can reach a place that has not yet (never further:
// p + 1 cannot end without this place's report of it, which needs p to have ended here). So
// two slots: the current phase and the next.
#pragma once

#include "apgas/clock.hpp"
#include "apgas/detail/activity.hpp"
#include "apgas/detail/clock_awaiters.hpp"
#include "apgas/detail/clock_tally.hpp"
#include "apgas/detail/spin_lock.hpp"

#include "clock_collective.hpp"
#include "small_list.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace apgas::detail {

class clock_protocol;

/// @brief One clock at one place. Thread-safety: any thread (one lock per clock).
class clock_proxy {
public:
  /// A clock made here (local until it first leaves), or one that reached this place.
  clock_proxy(clock_protocol& module, clock_id id, std::uint64_t phase, signal default_signal,
              std::optional<std::uint64_t> first_phase);
  clock_proxy(const clock_proxy&) = delete;
  clock_proxy& operator=(const clock_proxy&) = delete;
  ~clock_proxy();

  const clock_id& id() const noexcept { return m_id; }
  signal default_signal() const noexcept { return m_signal; }
  clock_protocol& module() const noexcept { return m_module; }

  // ---- registrations (each the state of one clock object: its phase, resumed flag) ----
  /// @brief A registration refers to the proxy (retain), or stops (release: may free it).
  void retain() noexcept;
  void release() noexcept;
  /// @brief The maker's registration of a new clock (phase 1).
  void register_maker() noexcept;
  /// @brief A registrant here in `phase` (resumed in it, or not) registers a new activity
  /// here, which starts in the same state.
  void register_child(std::uint64_t phase, bool resumed) noexcept;
  /// @brief A new activity that came with a token registers here in `phase`.
  void register_adopted(std::uint64_t phase) noexcept;
  /// @brief A registrant in `phase`, not resumed, registers a new activity at place `to`
  /// (counted here, adopted there). @return the token it travels with.
  clock_token register_remote(std::uint64_t phase, place_id to);
  /// @brief Undoes register_remote (the activity could not be sent). pre: the registrant has
  /// not resumed since.
  void unregister_remote(std::uint64_t phase, place_id to) noexcept;
  /// @brief Ends a registrant's phase. `c`: its contribution to the reduction, or null.
  /// pre: it has not resumed in `phase`.
  /// `advancing`: the registrant advances now; if its resume casts the phase's vote on the
  /// collective path, it watches the allreduce (see wait_in_place). @return true if it does.
  bool resume(std::uint64_t phase, const reduce_contribution* c, bool advancing = false);
  /// @brief Deregisters a registrant in `phase` (resumed in it, or not).
  void drop(std::uint64_t phase, bool resumed) noexcept;
  /// @brief The group allreduce of the current phase completed (pre: collective_done told it):
  /// ends the phase (all votes stable) or sends the phase's reports (see clock_collective.hpp).
  /// Once per allreduce: a second call does nothing.
  void complete_collective();
  /// @brief The waiting advance gives up: done() will queue the completion. @return false if
  /// done() was told meanwhile, seeing the watcher: the caller completes it.
  bool unwatch_collective() noexcept {
    std::uint8_t expected = collective_path::k_watched;
    // acq_rel: pairs with done()'s exchange.
    return m_path.state.compare_exchange_strong(expected, collective_path::k_running,
                                                std::memory_order_acq_rel);
  }
  /// @brief True once done() was told (acquire: the result is then readable).
  bool collective_completed() const noexcept {
    return m_path.state.load(std::memory_order_acquire) == collective_path::k_done;
  }
  /// @brief True once `phase` has ended here (acquire: the result is then readable).
  bool ended(std::uint64_t phase) const noexcept {
    return m_phase.load(std::memory_order_acquire) > phase;
  }
  /// @brief Queues `w` until `phase` (in which its registrant resumed) ends.
  /// @return false if it has ended meanwhile (nothing queued).
  bool wait(std::uint64_t phase, clock_waiter& w);
  /// @brief The reduction result of `phase`. pre: ended(phase), and the caller's registrant
  /// has not resumed in the next phase (so no later phase can have ended).
  const clock_partial& result_of(std::uint64_t phase) const noexcept;

  // ---- the protocol (clock_protocol calls these) ----
  /// @brief Applies a report from another place (all-to-all, or at the home).
  void on_report(const clock_report& r);
  /// @brief The home says `end.phase` has ended (beyond --clock-all-to-all-places places).
  void on_release(clock_phase_end end);
  /// @brief Phases this proxy ended on the collective path (a statistic).
  std::uint64_t phases_on_collective_path() const noexcept {
    return m_phases_collective.load(std::memory_order_relaxed); // relaxed: a statistic
  }
  /// @brief One line on what the current phase waits for (the SIGUSR1 dump).
  std::string describe() const;
  /// @brief True if nothing refers to this proxy any more and it owes nothing.
  bool idle() const noexcept;

private:
  struct phase_slot {
    std::int64_t unresumed = 0; ///< registrants that have neither resumed nor dropped
    std::uint64_t resumed = 0;  ///< registrants that resumed and carry into the next phase
    // Since the last report of this phase (the whole phase while the clock is local):
    std::uint64_t completed = 0;
    std::uint64_t carried = 0;
    std::vector<std::pair<place_id, std::uint64_t>> sent;
    clock_partial partial;
    std::uint64_t next_seq = 0; ///< reports of this phase taken so far
    clock_waiter* waiters = nullptr;
    bool unreported() const noexcept {
      return completed != 0 || carried != 0 || !sent.empty() || !partial.empty();
    }
    /// Empties it for a later phase (keeping the list's capacity).
    void reset() noexcept {
      unresumed = 0;
      resumed = completed = carried = next_seq = 0;
      sent.clear();
      partial.clear();
      waiters = nullptr;
    }
  };
  /// The slot of `phase`: the current phase's or the next's (pre: one of them). The two
  /// slots alternate, so that a phase's end resets one slot rather than moving both.
  phase_slot& slot_of(std::uint64_t phase) noexcept { return m_slots[phase & 1U]; }
  phase_slot& current_slot() noexcept { return slot_of(m_phase.load(std::memory_order_relaxed)); }
  const phase_slot& current_slot() const noexcept {
    return m_slots[m_phase.load(std::memory_order_relaxed) & 1U];
  }
  phase_slot& next_slot() noexcept { return slot_of(m_phase.load(std::memory_order_relaxed) + 1); }
  const phase_slot& next_slot() const noexcept {
    return m_slots[(m_phase.load(std::memory_order_relaxed) + 1) & 1U];
  }
  /// Where a registration that resumed in `phase` is counted: the next phase once `phase`
  /// has ended here (under the lock). Returns whether it is still resumed there.
  bool account(std::uint64_t& phase, bool resumed) const noexcept;
  void count_sent(phase_slot& s, place_id to, std::int64_t n);
  /// What a change under the lock leads to, done once the lock is released: reports to send,
  /// phase ends to release (the home beyond --clock-all-to-all-places), activities to wake.
  struct outbox {
    small_list<clock_report, 1> reports;
    bool start_collective = false; ///< the phase's vote is cast: start its group allreduce
    bool advancing = false;        ///< the change is an advancing registrant's resume
    /// The reports are this place's own and it tallies: publish applies them after sending
    /// them (the other places wait for them; the tally here does not).
    bool tally_after_send = false;
    small_list<clock_phase_end, 1> releases;
    small_list<clock_waiter*, 8> wake;
  };
  /// After a change under the lock: ends the phase (local clock) or takes a report (a
  /// distributed one) if the current phase's registrants here have all resumed.
  void after_change(outbox& out);
  /// The current phase ends here with the reduction `result`; `decision`: the tally's end of
  /// it (which says whether the next phases take the collective path), or null for a phase
  /// that ended on the collective path.
  void end_phase(clock_partial&& result, outbox& out, const clock_phase_end* decision);
  /// At a phase's end by the general protocol: this place joins the collective path if the
  /// phase was stable and it is a member, else leaves it (and frees the lane).
  void choose_path(const clock_phase_end& decision, std::uint64_t carried);
  /// On the collective path, the current phase's registrants here have all resumed: casts
  /// the vote (the first time) and holds the report.
  void cast_vote(outbox& out);
  /// cast_vote's common case: the place's part of the phase is stable; casts the vote and
  /// returns true (else false, nothing changed). `watched`: by an advancing registrant.
  bool cast_stable_vote(bool watched);
  /// The allreduce of the vote just cast is about to start (under m_lock).
  void begin_collective(bool watched) noexcept;
  /// Starts it (outside m_lock).
  void start_collective();
  /// complete_collective's common case: every vote stable, the phase ends here with nothing
  /// to send. @return false if it is not that case (nothing changed).
  bool complete_stable_phase();
  /// Holds the clock's lane here if it can (for a report's lane_ok).
  bool hold_lane();
  /// The stable report cast_vote took without building it, built for a fallback.
  clock_report stable_report(std::uint64_t phase);
  void free_lane() noexcept;
  void apply_ends(std::vector<clock_phase_end>& ends, outbox& out);
  /// Applies a report to this place's tally and the phase ends it brings.
  void tally(const clock_report& r, outbox& out);
  clock_report take_report(phase_slot& s, std::uint64_t phase);
  /// Outside the lock: sends the reports and releases, wakes the waiters.
  void publish(outbox& out);

  clock_protocol& m_module;
  const clock_id m_id;
  const signal m_signal;
  mutable spin_lock m_lock; ///< guards everything below but m_phase's readers and m_refs
  /// The current phase here: registrants of older phases have all moved on. Written under
  /// m_lock, read without it by advancing activities (see ended()).
  std::atomic<std::uint64_t> m_phase;
  std::atomic<std::uint64_t> m_refs{0}; ///< registrations referring to this proxy
  std::uint64_t m_registrants = 0;      ///< registrations here, in either slot
  phase_slot m_slots[2];                ///< by phase parity: the current phase's and the next's
  clock_partial m_last_result;          ///< the reduction of phase m_phase - 1
  /// Registrants present before the clock left the home, owed in the home's first report.
  std::uint64_t m_base = 0;
  /// The latest phase this place reported in (see idle()).
  std::uint64_t m_reported_through = 0;
  /// Set once the clock has left its home: the phase it left in (tallies start there).
  std::optional<std::uint64_t> m_first_phase;
  std::unique_ptr<clock_tally> m_tally; ///< tallying places only
  std::vector<clock_phase_end> m_ends;  ///< phases the tally ended (reused, under m_lock)

  /// The collective path at this place (clock_collective.hpp), under m_lock but for `done`.
  struct collective_path final : collective_done {
    clock_proxy* proxy = nullptr;
    bool active = false; ///< a member: phases from the current one on end on the path
    std::vector<place_id> members;
    std::size_t my_index = 0;
    std::uint64_t registrants = 0;  ///< carried into each phase here while it is stable
    bool in_flight = false;         ///< the current phase's vote is cast, not completed here
    std::vector<clock_report> held; ///< the phase's reports, sent if it falls back
    bool stable_taken = false;      ///< its first report was stable, taken unbuilt
    clock_partial stable_partial;   ///< that report's partial
    phase_vote vote;                ///< the allreduce's value: the vote, then the result
    std::exception_ptr error;       ///< the network's, told by done()
    /// Who completes the allreduce once done() is told: k_running (nobody waits in place:
    /// done() queues it with the module), k_watched (an advance waits in place for it and
    /// completes it), k_done (told). acq_rel exchanges between done() and the watcher.
    static constexpr std::uint8_t k_running = 0, k_watched = 1, k_done = 2;
    std::atomic<std::uint8_t> state{k_done};
    /// Called by the network's poller, under its lock: queues the completion with the module.
    void done(std::exception_ptr e) noexcept override;
  };
  collective_path m_path;
  std::uint64_t m_last_collective = 0; ///< the last phase that ended here on the path
  /// Phases ended here on the path (a statistic: written under m_lock, read by the stats).
  std::atomic<std::uint64_t> m_phases_collective{0};
  std::uint32_t m_lane = 0; ///< the clock's lane (when the network has lanes)
  bool m_lane_held = false; ///< this place holds it for the clock
};

} // namespace apgas::detail
