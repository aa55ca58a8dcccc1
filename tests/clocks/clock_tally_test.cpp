// The counting of a distributed clock's phases against random schedules (no transport, no
// MPI): a model of places whose registrants resume, drop and register new activities at other
// places, reporting as the clock's places do; a tally that receives the reports in a random
// order must end a phase exactly when every registrant of that phase has resumed or dropped,
// never before, and must end every such phase once all reports are in.
#include <apgas/detail/clock_tally.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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
