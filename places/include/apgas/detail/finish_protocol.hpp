// The counting protocol of a distributed finish, without transport or scheduler: what the
// home place of a finish and each other place keep, and what a report says.
//
// Vector counting flushed on local quiescence (after X10's default Finish): every place that
// runs activities of a finish keeps a proxy counting the activities it received and the
// activities it sent to each place; when its local part goes quiet it sends both home in one
// report and forgets them. Home keeps, per place, pending = sent there - completed there.
// The finish's remote part is closed exactly when every pending count is zero.
//
// Why never early: an activity is counted as sent (by its sender) before it is sent, and a
// place reports that activity completed in the same report as everything it sent meanwhile.
// So while any activity is alive or in flight, some pending count is positive: its own, or
// the one of the place that sent it and has not reported yet (that place is itself pending
// until it reports). Reports of one place must be applied in the order they were taken:
// each carries a sequence number, and the home holds back one that arrives before its
// predecessor (the engine takes reports in order but may send two of them out of order).
// Reports of different places may arrive in any order (counts may go negative meanwhile,
// which keeps the finish open too).
#pragma once

#include "apgas/detail/spin_lock.hpp"

#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace apgas::detail {

using place_id = std::uint32_t;

/// @brief Names a finish across places: its home and a serial number unique at that home.
struct finish_id {
  place_id home = 0;
  std::uint64_t serial = 0;
  friend bool operator==(const finish_id&, const finish_id&) = default;
};

/// @brief The serial of a finish_pattern::spmd finish has this bit set (its proxies free
/// themselves after their one report, and its home sends no cleanup).
inline constexpr std::uint64_t k_spmd_serial_bit = std::uint64_t{1} << 63;
inline bool is_spmd(const finish_id& id) noexcept { return (id.serial & k_spmd_serial_bit) != 0; }

struct finish_id_hash {
  std::size_t operator()(const finish_id& id) const noexcept {
    return std::hash<std::uint64_t>{}(id.serial * 0x9E3779B97F4A7C15ULL ^ id.home);
  }
};

/// @brief What a place tells the home of a finish when its part of it went quiet.
struct finish_report {
  finish_id id;
  place_id from = 0;
  std::uint64_t seq = 0;                                    ///< 0, 1, ... per place and finish
  std::uint64_t completed = 0;                              ///< activities received and ended
  std::vector<std::pair<place_id, std::uint64_t>> sent;     ///< activities sent, per place
};

/// @brief Home side: pending activities per place. Thread-safety: any thread.
class home_tally {
public:
  /// @brief The home sends one activity to `to`. @return true if the remote part opened now.
  bool on_send(place_id to) {
    std::lock_guard guard(m_lock);
    // A stream of sends to one place (the common case) only counts up: the map is updated
    // when the stream changes place or a report arrives.
    if (m_streak > 0 && m_streak_to == to) {
      ++m_streak;
      return false;
    }
    const bool was_closed = m_pending.empty() && m_streak == 0;
    end_streak();
    m_streak_to = to;
    m_streak = 1;
    return was_closed;
  }
  /// @brief A report arrived. Applies it, or holds it back until its place's earlier
  /// reports are in. @return true if the remote part is closed now.
  bool on_report(const finish_report& r) {
    std::lock_guard guard(m_lock);
    end_streak();
    std::uint64_t& next = m_next_seq[r.from];
    if (r.seq != next) { // an earlier report of that place is still on its way
      m_held_back.push_back(r);
      return false;
    }
    apply(r);
    ++next;
    // Apply what it unblocks (rare: held-back reports exist only after a reordering).
    for (bool progress = true; progress && !m_held_back.empty();) {
      progress = false;
      for (auto it = m_held_back.begin(); it != m_held_back.end(); ++it) {
        std::uint64_t& n = m_next_seq[it->from];
        if (it->seq != n) continue;
        apply(*it);
        ++n;
        m_held_back.erase(it);
        progress = true;
        break;
      }
    }
    return m_pending.empty() && m_held_back.empty();
  }
  /// @brief Reports held back, waiting for an earlier one of the same place.
  std::size_t held_back() const {
    std::lock_guard guard(m_lock);
    return m_held_back.size();
  }
  /// @brief Places with a non-zero pending count (for diagnostics of a hung finish).
  std::vector<std::pair<place_id, std::int64_t>> snapshot() const {
    std::lock_guard guard(m_lock);
    std::unordered_map<place_id, std::int64_t> pending = m_pending;
    if (m_streak > 0 && (pending[m_streak_to] += static_cast<std::int64_t>(m_streak)) == 0)
      pending.erase(m_streak_to);
    return {pending.begin(), pending.end()};
  }

private:
  void apply(const finish_report& r) { // pre: m_lock held
    for (const auto& [to, n] : r.sent) adjust(to, static_cast<std::int64_t>(n));
    adjust(r.from, -static_cast<std::int64_t>(r.completed));
  }
  void end_streak() { // pre: m_lock held
    if (m_streak == 0) return;
    adjust(m_streak_to, static_cast<std::int64_t>(m_streak));
    m_streak = 0;
  }
  void adjust(place_id p, std::int64_t delta) { // pre: m_lock held
    auto [it, inserted] = m_pending.try_emplace(p, 0);
    it->second += delta;
    if (it->second == 0) m_pending.erase(it);
  }
  mutable spin_lock m_lock;
  std::unordered_map<place_id, std::int64_t> m_pending; ///< only non-zero entries
  place_id m_streak_to = 0;   ///< sends counted in m_streak go there
  std::uint64_t m_streak = 0; ///< sends to m_streak_to not yet in m_pending
  std::unordered_map<place_id, std::uint64_t> m_next_seq; ///< per reporting place
  std::vector<finish_report> m_held_back;                  ///< arrived before a predecessor
};

/// @brief Place side: what one place's part of a remote finish did since its last report.
/// Thread-safety: on_send from any thread; on_arrival and take_report under one lock of the
/// caller's (the engine's proxy lock, which arrivals take anyway): arrivals then cost no
/// second lock.
class proxy_tally {
public:
  /// @brief An activity of the finish arrived here. pre: the caller's lock (see above).
  void on_arrival() noexcept { ++m_received; }
  /// @brief `n` activities of the finish arrived here. pre: the caller's lock (see above).
  void on_arrivals(std::uint64_t n) noexcept { m_received += n; }
  /// @brief An activity of the finish is sent from here to `to` (before it is sent).
  void on_send(place_id to) {
    std::lock_guard guard(m_lock);
    for (auto& [p, n] : m_sent) {
      if (p == to) {
        ++n;
        return;
      }
    }
    m_sent.emplace_back(to, 1);
  }
  /// @brief Takes the counts for a report (every received activity has ended) and resets.
  /// pre: the caller's lock (see above).
  finish_report take_report(finish_id id, place_id here) {
    std::lock_guard guard(m_lock);
    finish_report r{id, here, m_next_seq++, m_received, std::move(m_sent)};
    m_received = 0;
    m_sent.clear();
    return r;
  }

private:
  spin_lock m_lock;             ///< guards m_sent (on_send comes from any strand)
  std::uint64_t m_received = 0; ///< guarded by the caller's lock
  std::uint64_t m_next_seq = 0; ///< guarded by the caller's lock
  std::vector<std::pair<place_id, std::uint64_t>> m_sent; ///< few destinations: a flat list
};

} // namespace apgas::detail
