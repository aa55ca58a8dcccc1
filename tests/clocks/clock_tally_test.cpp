// The counting of a distributed clock's phases against random schedules (no transport, no
// MPI): a model of places whose registrants resume, drop and register new activities at other
// places, reporting as the clock's places do; a tally that receives the reports in a random
// order must end a phase exactly when every registrant of that phase has resumed or dropped,
// never before, and must end every such phase once all reports are in.
#include <apgas/detail/clock_tally.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <vector>

namespace {

using apgas::detail::clock_phase_end;
using apgas::detail::clock_report;
using apgas::detail::clock_tally;
using apgas::detail::place_id;

/// The truth: registrants per place and phase, what each place has not reported yet, the
/// registrations in flight, and the phases that have truly ended.
class clock_model {
public:
  clock_model(place_id places, std::uint64_t seed) : m_places(places), m_rng(seed) {
    m_unresumed.assign(places, 0);
    m_resumed.assign(places, 0);
    m_unreported.resize(places);
    m_seq.assign(places, 0);
    m_unresumed[0] = 3; // the home's registrants when the clock first leaves it
    m_base = 3;
  }

  /// One random step: a registrant acts, a registration lands, a report is delivered.
  void step(clock_tally& tally) {
    const unsigned what = m_rng() % 8;
    if (what < 2 && !m_in_flight.empty()) return land();
    if (what < 4 && !m_reports.empty()) return deliver(tally);
    act();
  }
  /// Delivers every report still queued (in random order).
  void drain(clock_tally& tally) {
    while (!m_reports.empty() || !m_in_flight.empty()) {
      if (!m_in_flight.empty()) land();
      else deliver(tally);
    }
  }
  std::uint64_t phase() const { return m_phase; }
  std::uint64_t ended_truly() const { return m_phase - 1; }
  bool over() const { return m_over; }
  std::uint64_t ended_by_tally = 0;

private:
  struct pending_report {
    clock_report r;
  };
  struct unreported {
    std::uint64_t completed = 0, carried = 0;
    std::map<place_id, std::uint64_t> sent;
    bool any() const { return completed != 0 || carried != 0 || !sent.empty(); }
  };

  std::vector<place_id> places_with_unresumed() const {
    std::vector<place_id> v;
    for (place_id p = 0; p < m_places; ++p)
      if (m_unresumed[p] > 0) v.push_back(p);
    return v;
  }

  void act() {
    if (m_over) return;
    const auto candidates = places_with_unresumed();
    if (candidates.empty()) return;
    const place_id p = candidates[m_rng() % candidates.size()];
    unreported& u = m_unreported[p];
    switch (m_rng() % 4) {
    case 0: // drop
      --m_unresumed[p];
      ++u.completed;
      break;
    case 1: { // register a new activity at a random place (it arrives later)
      const place_id to = static_cast<place_id>(m_rng() % m_places);
      ++u.sent[to];
      m_in_flight.push_back(to);
      return; // still unresumed: no report yet
    }
    default: // resume (stays into the next phase)
      --m_unresumed[p];
      ++m_resumed[p];
      ++u.completed;
      ++u.carried;
      break;
    }
    maybe_report(p);
    maybe_end_phase();
  }

  void land() {
    const std::size_t i = m_rng() % m_in_flight.size();
    const place_id to = m_in_flight[i];
    m_in_flight.erase(m_in_flight.begin() + static_cast<std::ptrdiff_t>(i));
    ++m_unresumed[to];
  }

  void maybe_report(place_id p) {
    unreported& u = m_unreported[p];
    if (m_unresumed[p] != 0 || (!u.any() && !(p == 0 && m_base != 0))) return;
    clock_report r;
    r.from = p;
    r.first_phase = 1;
    r.phase = m_phase;
    r.seq = m_seq[p]++;
    r.base = p == 0 ? std::exchange(m_base, 0) : 0;
    r.completed = u.completed;
    r.carried = u.carried;
    r.sent.assign(u.sent.begin(), u.sent.end());
    u = unreported{};
    m_reports.push_back({std::move(r)});
  }

  void maybe_end_phase() {
    for (place_id p = 0; p < m_places; ++p)
      if (m_unresumed[p] != 0 || m_unreported[p].any()) return;
    if (!m_in_flight.empty() || m_base != 0) return;
    // Every registrant of the phase has resumed or dropped: it has truly ended.
    std::uint64_t carried = 0;
    for (place_id p = 0; p < m_places; ++p) {
      m_unresumed[p] = m_resumed[p];
      carried += m_resumed[p];
      m_resumed[p] = 0;
      m_seq[p] = 0;
    }
    ++m_phase;
    if (carried == 0) m_over = true;
  }

  void deliver(clock_tally& tally) {
    const std::size_t i = m_rng() % m_reports.size();
    clock_report r = std::move(m_reports[i].r);
    m_reports.erase(m_reports.begin() + static_cast<std::ptrdiff_t>(i));
    std::vector<clock_phase_end> ended;
    tally.apply(std::move(r), ended);
    for (const clock_phase_end& e : ended) {
      ASSERT_EQ(e.phase, ended_by_tally + 1) << "phases end in order";
      ASSERT_LE(e.phase, ended_truly()) << "phase " << e.phase << " ended early";
      ended_by_tally = e.phase;
    }
  }

  place_id m_places;
  std::mt19937_64 m_rng;
  std::uint64_t m_phase = 1;
  std::uint64_t m_base = 0;
  bool m_over = false;
  std::vector<std::int64_t> m_unresumed;
  std::vector<std::uint64_t> m_resumed;
  std::vector<unreported> m_unreported;
  std::vector<std::uint64_t> m_seq;
  std::vector<place_id> m_in_flight;
  std::vector<pending_report> m_reports;
};

TEST(clock_tally, never_ends_a_phase_early_and_ends_every_phase_once_all_reports_are_in) {
  for (std::uint64_t seed = 1; seed <= 2000; ++seed) {
    for (place_id places : {2U, 3U, 5U}) {
      clock_model model(places, seed);
      clock_tally tally(1);
      for (int i = 0; i < 1500 && !model.over(); ++i) {
        model.step(tally);
        if (testing::Test::HasFatalFailure()) return;
      }
      model.drain(tally);
      if (testing::Test::HasFatalFailure()) return;
      // Reports of phases that have not ended may still be missing (their registrants have
      // not all resumed); every phase that has ended is known to the tally.
      EXPECT_EQ(model.ended_by_tally, model.ended_truly()) << "seed " << seed;
    }
  }
}

TEST(clock_tally, reduction_results_are_folded_in_place_order) {
  using apgas::detail::clock_partial;
  using apgas::detail::combine_bytes;
  auto partial = [](double v) {
    clock_partial p;
    p.fold(&combine_bytes<double, apgas::sum_op>, reinterpret_cast<const std::byte*>(&v), sizeof v);
    return p;
  };
  // The same reports in two orders give bit-identical sums.
  double results[2];
  for (int order = 0; order < 2; ++order) {
    clock_tally tally(1);
    std::vector<clock_report> reports(3);
    const double values[3] = {1e16, 1.0, -1e16};
    for (place_id p = 0; p < 3; ++p) {
      reports[p].from = p;
      reports[p].first_phase = 1;
      reports[p].phase = 1;
      reports[p].base = p == 0 ? 1 : 0;
      reports[p].completed = 1;
      reports[p].partial = partial(values[p]);
      if (p == 0) reports[p].sent = {{1, 1}, {2, 1}};
    }
    std::vector<clock_phase_end> ended;
    if (order == 0)
      for (auto& r : reports) tally.apply(r, ended);
    else
      for (int i = 2; i >= 0; --i) tally.apply(reports[static_cast<std::size_t>(i)], ended);
    ASSERT_EQ(ended.size(), 1U);
    std::memcpy(&results[order], ended[0].result.value.data(), sizeof(double));
    EXPECT_TRUE(ended[0].last);
  }
  EXPECT_EQ(results[0], results[1]);
}

} // namespace

// ---- stable phases and the collective path (clock_collective.hpp) ---------------------------

namespace {

/// A report of `from` in `phase`: `n` registrants completed and carried on, nothing sent.
clock_report stable_report(place_id from, std::uint64_t phase, std::uint64_t n,
                           std::uint64_t last_collective = 0) {
  clock_report r;
  r.from = from;
  r.first_phase = 1;
  r.phase = phase;
  r.completed = n;
  r.carried = n;
  r.lane_ok = true;
  r.last_collective = last_collective;
  return r;
}

/// A tally past its first phase: place 0 had 2 registrants (base), and sent one to place 1;
/// phase 1 ends with 2 carried at place 0 and 1 at place 1 (not stable: a base and a send).
clock_tally tally_after_first_phase() {
  clock_tally tally(1);
  std::vector<clock_phase_end> ended;
  clock_report home;
  home.from = 0;
  home.first_phase = 1;
  home.phase = 1;
  home.base = 2;
  home.completed = 2;
  home.carried = 2;
  home.sent = {{1, 1}};
  home.lane_ok = true;
  clock_report other = stable_report(1, 1, 1);
  tally.apply(home, ended);
  tally.apply(other, ended);
  EXPECT_EQ(ended.size(), 1U);
  EXPECT_FALSE(ended[0].stable);
  return tally;
}

} // namespace

TEST(clock_tally, a_phase_that_changes_no_registration_is_stable) {
  clock_tally tally = tally_after_first_phase();
  std::vector<clock_phase_end> ended;
  tally.apply(stable_report(1, 2, 1), ended);
  tally.apply(stable_report(0, 2, 2), ended);
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_TRUE(ended[0].stable);
  EXPECT_EQ(ended[0].members, (std::vector<place_id>{0, 1}));
}

TEST(clock_tally, a_phase_with_a_change_is_not_stable) {
  // Each variant changes one thing of a stable phase 2.
  const auto variants = std::vector<std::function<void(std::vector<clock_report>&)>>{
      [](auto& r) {
        r[0].sent = {{1, 1}};
      },                                                  // a registration sent (and so, one more)
      [](auto& r) { r[0].carried = 1; },                  // a drop
      [](auto& r) { r[1].lane_ok = false; },              // the lane is another clock's there
      [](auto& r) { r[0].completed = r[0].carried = 3; }, // a registrant came from elsewhere
  };
  for (std::size_t v = 0; v < variants.size(); ++v) {
    clock_tally tally = tally_after_first_phase();
    std::vector<clock_report> reports{stable_report(0, 2, 2), stable_report(1, 2, 1)};
    variants[v](reports);
    std::vector<clock_phase_end> ended;
    if (v == 0) { // the registration sent to place 1 resumed there: a second report of it
      clock_report more = stable_report(1, 2, 1);
      more.seq = 1;
      tally.apply(more, ended);
    }
    if (v == 3) { // the registrant came from place 1, which sent it in phase 1... as a send
      reports[1].sent = {{0, 1}};
    }
    for (const auto& r : reports) tally.apply(r, ended);
    ASSERT_EQ(ended.size(), 1U) << "variant " << v;
    EXPECT_FALSE(ended[0].stable) << "variant " << v;
    EXPECT_TRUE(ended[0].members.empty()) << "variant " << v;
  }
}

TEST(clock_tally, skips_the_phases_that_ended_on_the_collective_path) {
  clock_tally tally = tally_after_first_phase();
  std::vector<clock_phase_end> ended;
  tally.apply(stable_report(0, 2, 2), ended);
  tally.apply(stable_report(1, 2, 1), ended);
  ASSERT_EQ(ended.size(), 1U);
  ASSERT_TRUE(ended[0].stable);
  ended.clear();
  // Phases 3 to 6 end on the collective path; 7 falls back (place 1 drops its registrant):
  // the reports say so, and the tally starts phase 7 from the same carries.
  clock_report drop = stable_report(1, 7, 1, 6);
  drop.carried = 0;
  tally.apply(drop, ended);
  EXPECT_TRUE(ended.empty());
  EXPECT_EQ(tally.oldest_open_phase(), 7U);
  tally.apply(stable_report(0, 7, 2, 6), ended);
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_EQ(ended[0].phase, 7U);
  EXPECT_FALSE(ended[0].stable);
  EXPECT_FALSE(ended[0].last);
}

TEST(clock_tally, a_report_from_a_place_off_the_path_is_kept_for_its_phase) {
  clock_tally tally = tally_after_first_phase();
  std::vector<clock_phase_end> ended;
  tally.apply(stable_report(0, 2, 2), ended);
  tally.apply(stable_report(1, 2, 1), ended);
  ended.clear();
  // Phase 5 falls back: place 0 registered an activity at place 2, which reports first; it
  // knows nothing of the path (last_collective 0).
  clock_report newcomer = stable_report(2, 5, 1);
  tally.apply(newcomer, ended);
  clock_report sender = stable_report(0, 5, 2, 4);
  sender.sent = {{2, 1}};
  tally.apply(sender, ended);
  EXPECT_TRUE(ended.empty());
  tally.apply(stable_report(1, 5, 1, 4), ended);
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_EQ(ended[0].phase, 5U);
}

TEST(clock_tally, a_report_past_the_path_waits_for_the_phase_before_it) {
  clock_tally tally = tally_after_first_phase();
  std::vector<clock_phase_end> ended;
  // Phase 2 ends stable at the other places, which go on to phases 3 and 4 on the path and
  // fall back at 5; here place 1's report of phase 2 is still on its way.
  tally.apply(stable_report(0, 2, 2), ended);
  tally.apply(stable_report(0, 5, 2, 4), ended);
  EXPECT_TRUE(ended.empty());
  tally.apply(stable_report(1, 2, 1), ended); // phase 2 ends: the waiting report skips to 5
  ASSERT_EQ(ended.size(), 1U);
  EXPECT_EQ(ended[0].phase, 2U);
  EXPECT_EQ(tally.oldest_open_phase(), 5U);
  tally.apply(stable_report(1, 5, 1, 4), ended);
  ASSERT_EQ(ended.size(), 2U);
  EXPECT_EQ(ended[1].phase, 5U);
}
