// The counting of a distributed finish, without transport or scheduler: what the home of a
// finish keeps (home_tally), what each other place keeps (proxy_tally), and what a report
// says. The protocol that moves these counts between places, and why it never ends a finish
// early, is in places/src/distributed_finish.hpp.
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
  std::uint64_t seq = 0;                                ///< 0, 1, ... per place and finish
  std::uint64_t completed = 0;                          ///< activities received and ended
  std::vector<std::pair<place_id, std::uint64_t>> sent; ///< activities sent, per place
};

/// @brief A place that received at least this many activities of a finish from its home
/// holds even its first report until the home asks (see distributed_finish.hpp). The same at every
/// place (the home asks by it). Below the 512 messages a poll delivers at most (transport_base), so
/// that a stream's first quiet period, after the first poll's activities ran, already holds; a
/// finish with fewer at a place pays no ask there.
inline constexpr std::uint64_t k_stream_activities = 256;

/// @brief Home side: pending activities per place. Thread-safety: any thread.
class home_tally {
public:
  /// @param stream_activities see k_stream_activities (tests use small values).
  explicit home_tally(std::uint64_t stream_activities = k_stream_activities)
      : m_stream_activities(stream_activities) {}
  /// @brief The home sends one activity to `to`. @return true if the remote part opened now.
  /// Inline always, with the rare part out of line: this runs for every remote async, and GCC
  /// leaves it out of line in large translation units otherwise.
  [[gnu::always_inline]] bool on_send(place_id to) {
    m_lock.lock();
    // A stream of sends to one place (the common case) only counts up: the map is updated
    // when the stream changes place or a report arrives.
    if (m_streak > 0 && m_streak_to == to) [[likely]] {
      ++m_streak;
      m_lock.unlock();
      return false;
    }
    return start_streak(to); // unlocks
  }
  /// @brief The start of a new stream of sends (see on_send). pre: m_lock held; unlocks it.
  [[gnu::noinline]] bool start_streak(place_id to) {
    std::lock_guard guard(m_lock, std::adopt_lock);
    const bool was_closed = m_pending.empty() && m_streak == 0;
    end_streak();
    m_streak_to = to;
    m_streak = 1;
    return was_closed;
  }
  /// @brief A report arrived. Applies it, or holds it back until its place's earlier
  /// reports are in. Once the home is quiet (on_home_quiet), appends to `ask` the places the
  /// applied reports made worth asking (see distributed_finish.hpp).
  /// @return true if the remote part is closed now.
  bool on_report(const finish_report& r, std::vector<place_id>* ask = nullptr) {
    std::lock_guard guard(m_lock);
    end_streak();
    if (r.seq != m_reporters[r.from].next_seq) { // an earlier one of that place is on its way
      m_held_back.push_back(r);
      return false;
    }
    apply(r, ask);
    // Apply what it unblocks (rare: held-back reports exist only after a reordering).
    for (bool progress = true; progress && !m_held_back.empty();) {
      progress = false;
      for (auto it = m_held_back.begin(); it != m_held_back.end(); ++it) {
        if (it->seq != m_reporters[it->from].next_seq) continue;
        const finish_report unblocked = std::move(*it);
        m_held_back.erase(it);
        apply(unblocked, ask);
        progress = true;
        break;
      }
    }
    return m_pending.empty() && m_held_back.empty();
  }
  /// @brief The home's own activities of the finish have all ended, for good (pre: its
  /// remote part is open; nothing at home can start another). @return the places to ask for
  /// their held reports now (see distributed_finish.hpp); later ones come from on_report.
  std::vector<place_id> on_home_quiet() {
    std::lock_guard guard(m_lock);
    end_streak();
    m_home_quiet = true;
    std::vector<place_id> ask;
    for (const auto& [p, n] : m_pending) consider_asking(p, &ask);
    return ask;
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
  struct reporter {
    std::uint64_t next_seq = 0; ///< reports of this place applied so far
    bool asked = false;         ///< asked for its held reports (at most once)
  };
  void apply(const finish_report& r, std::vector<place_id>* ask) { // pre: m_lock held
    for (const auto& [to, n] : r.sent) adjust(to, static_cast<std::int64_t>(n));
    adjust(r.from, -static_cast<std::int64_t>(r.completed));
    ++m_reporters[r.from].next_seq;
    if (!m_home_quiet || ask == nullptr) return;
    // Only the places whose counts this report changed can have become worth asking.
    consider_asking(r.from, ask);
    for (const auto& [to, n] : r.sent) consider_asking(to, ask);
  }
  /// Asks p if it may hold a report the finish needs (see distributed_finish.hpp).
  void consider_asking(place_id p, std::vector<place_id>* ask) { // pre: m_lock held
    const auto pending = m_pending.find(p);
    if (pending == m_pending.end() || pending->second <= 0) return;
    const auto it = m_reporters.find(p);
    const bool reported = it != m_reporters.end() && it->second.next_seq > 0;
    if (!reported && static_cast<std::uint64_t>(pending->second) < m_stream_activities) return;
    reporter& r = it != m_reporters.end() ? it->second : m_reporters[p];
    if (r.asked) return;
    r.asked = true;
    ask->push_back(p);
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
  const std::uint64_t m_stream_activities;
  mutable spin_lock m_lock;
  std::unordered_map<place_id, std::int64_t> m_pending; ///< only non-zero entries
  place_id m_streak_to = 0;                             ///< sends counted in m_streak go there
  std::uint64_t m_streak = 0;                         ///< sends to m_streak_to not yet in m_pending
  std::unordered_map<place_id, reporter> m_reporters; ///< per reporting place
  std::vector<finish_report> m_held_back;             ///< arrived before a predecessor
  bool m_home_quiet = false;                          ///< see on_home_quiet
};

/// @brief Place side: what one place's part of a remote finish did since its last report.
/// Thread-safety: on_send from any thread; on_arrival and take_report under one lock of the
/// caller's (the dispatcher's proxy lock, which arrivals take anyway): arrivals then cost no
/// second lock.
class proxy_tally {
public:
  /// @brief `n` activities of the finish arrived here, from its home or not. pre: the
  /// caller's lock (see above).
  void on_arrivals(std::uint64_t n, bool from_home) noexcept {
    m_received += n;
    if (from_home) m_received_from_home += n;
  }
  /// @brief Activities that arrived here from the home since the proxy began: the home counts
  /// them too, so it asks this place for its first report once they reach
  /// k_stream_activities (see distributed_finish.hpp). pre: the caller's lock.
  std::uint64_t received_from_home() const noexcept { return m_received_from_home; }
  /// @brief An activity of the finish is sent from here to `to` (before it is sent).
  /// Constant time whatever the number of destinations: a send to the place of the previous
  /// one is an increment; another finds its entry by a scan of a few, or through an index once
  /// there are more (a place of a run over thousands of places may send to every one of them,
  /// as random access does).
  [[gnu::always_inline]] void on_send(place_id to) {
    std::lock_guard guard(m_lock);
    if (m_last < m_sent.size() && m_sent[m_last].first == to) [[likely]] {
      ++m_sent[m_last].second;
      return;
    }
    count_elsewhere(to);
  }
  /// @brief Takes the counts for a report (every received activity has ended) and resets.
  /// pre: the caller's lock (see above).
  finish_report take_report(finish_id id, place_id here) {
    std::lock_guard guard(m_lock);
    finish_report r{id, here, m_next_seq++, m_received, std::move(m_sent)};
    m_received = 0;
    m_sent.clear();
    m_index.clear();
    m_last = 0;
    return r;
  }

private:
  /// Destinations up to which a scan of m_sent finds an entry faster than a hash lookup.
  static constexpr std::size_t k_scan_limit = 8;

  /// A send to another place than the previous one. pre: m_lock held.
  [[gnu::noinline]] void count_elsewhere(place_id to) {
    if (m_index.empty()) {
      for (std::size_t i = 0; i < m_sent.size(); ++i) {
        if (m_sent[i].first == to) {
          m_last = i;
          ++m_sent[i].second;
          return;
        }
      }
      if (m_sent.size() < k_scan_limit) {
        m_sent.emplace_back(to, 1);
        m_last = m_sent.size() - 1;
        return;
      }
      // One destination more than a scan is worth: index them all from now on.
      m_index.reserve(2 * k_scan_limit);
      for (std::size_t i = 0; i < m_sent.size(); ++i) m_index.emplace(m_sent[i].first, i);
    }
    if (const auto it = m_index.find(to); it != m_index.end()) {
      m_last = it->second;
    } else {
      m_sent.emplace_back(to, 0);
      try {
        m_index.emplace(to, m_sent.size() - 1);
      } catch (...) { // out of memory: the send fails uncounted, and the two stay in step
        m_sent.pop_back();
        throw;
      }
      m_last = m_sent.size() - 1;
    }
    ++m_sent[m_last].second;
  }

  spin_lock m_lock;                       ///< guards m_sent (on_send comes from any strand)
  std::uint64_t m_received = 0;           ///< guarded by the caller's lock
  std::uint64_t m_received_from_home = 0; ///< guarded by the caller's lock
  std::uint64_t m_next_seq = 0;           ///< guarded by the caller's lock
  std::vector<std::pair<place_id, std::uint64_t>> m_sent; ///< guarded by m_lock; the report's
  std::size_t m_last = 0; ///< guarded by m_lock: the entry of the previous send (if any)
  std::unordered_map<place_id, std::size_t> m_index; ///< guarded by m_lock: m_sent's entries,
                                                     ///< once there are more than k_scan_limit
};

} // namespace apgas::detail
