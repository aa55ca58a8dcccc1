// averaging [--n N] [--epsilon e] [--max-iterations k] [--activities A] [--sync clock|finish|both]:
// the uClocks paper's one-dimensional iterative averaging over places. Points 0 .. N+1, the two
// ends fixed (0 and 1), the N points between them in one block per place, each block cut into
// A chunks, one activity each. Every phase each point becomes the average of its two
// neighbours' previous values, until the largest change of a phase is below epsilon.
//
// With a clock (--sync clock): one activity per chunk for the whole run, registered on one
// clock; each phase ends with `co_await c.advance(apgas::max, change)`, whose value is the
// convergence test. A block's end points go to the neighbouring places' ghost cells as clocked
// async_ats: the phase cannot end before they have arrived.
// With a finish per phase (--sync finish): each phase, place 0 starts one activity per place
// under a finish; it starts one activity per chunk, and sends its end points and its largest
// change (to place 0) as async_ats governed by that finish.
// Checked against the sequential loop: the same number of phases and the same values.
#include <apgas/clock.hpp>

#include "apgas_apps/cli.hpp"
#include "apgas_apps/phased.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

namespace {

using apgas::place_id;
using apgas::task;

constexpr std::uint64_t k_default_n = 100'000;
constexpr double k_default_epsilon = 1e-4; // about 5,000 phases
constexpr std::uint64_t k_default_max_iterations = 1'000'000;
constexpr std::uint32_t k_default_activities = 8;
constexpr double k_tolerance = 1e-12; // the values are computed by the same expressions

/// What every place needs to know of the run (bitwise: it travels as an argument).
struct params {
  std::uint64_t n = 0;
  double epsilon = 0;
  std::uint64_t max_iterations = 0;
  std::uint32_t activities = 0;
  std::uint32_t zero = 0; ///< fills what would be padding
};

/// Value of point i before the first phase: 0, but the right end (n + 1), fixed at 1. The
/// largest change of a phase then shrinks as one over the number of phases (about 0.48 /
/// epsilon phases), whatever n as long as the front has not crossed the N points: epsilon sets
/// the number of phases, N the work of each.
double initial_value(std::uint64_t i, std::uint64_t n) { return i == n + 1 ? 1.0 : 0.0; }

/// Point i's new value from `old`; returns how much it changed. The sequential loop and both
/// parallel versions compute every value with this, so they agree exactly.
inline double update(const double* old, double* next, std::uint64_t i) {
  next[i] = 0.5 * (old[i - 1] + old[i + 1]);
  return std::fabs(next[i] - old[i]);
}

/// Updates points [lo, hi); returns the largest change.
double update_range(const double* old, double* next, std::uint64_t lo, std::uint64_t hi) {
  double most = 0;
  for (std::uint64_t i = lo; i < hi; ++i) most = std::max(most, update(old, next, i));
  return most;
}

// ---- sequential --------------------------------------------------------------------------------

struct seq_result {
  std::uint64_t iterations = 0;
  std::vector<double> values; ///< points 1 .. n
};

seq_result averaging_seq(const params& prm) {
  std::array<std::vector<double>, 2> buf;
  for (auto& b : buf) {
    b.resize(prm.n + 2);
    for (std::uint64_t i = 0; i <= prm.n + 1; ++i) b[i] = initial_value(i, prm.n);
  }
  std::uint64_t t = 0;
  for (;;) {
    const double most = update_range(buf[t % 2].data(), buf[(t + 1) % 2].data(), 1, prm.n + 1);
    ++t;
    if (most < prm.epsilon || t == prm.max_iterations) break;
  }
  seq_result r;
  r.iterations = t;
  r.values.assign(buf[t % 2].begin() + 1, buf[t % 2].begin() + static_cast<long>(prm.n) + 1);
  return r;
}

// ---- one place's block -------------------------------------------------------------------------

/// The points of one place: local 1 .. count are global first .. first + count - 1; local 0
/// and count + 1 are ghost cells (the neighbouring places' end points, or the fixed ends).
/// Phase t reads buf[t % 2] and writes buf[(t + 1) % 2]: a neighbour's end point of phase t
/// goes into the ghost cell of buf[(t + 1) % 2], which this place reads only in phase t + 1.
struct block {
  params prm;
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::uint32_t chunks = 0;
  std::array<std::vector<double>, 2> buf;
  std::vector<double> chunk_change; ///< --sync finish: each chunk's largest change
  std::uint64_t iterations = 0;     ///< phases run, once the run is over
  double change = 0;                ///< the largest change of the last phase

  /// Chunk a's points, [lo, hi) in local indices.
  std::pair<std::uint64_t, std::uint64_t> chunk(std::uint32_t a) const {
    return {1 + count * a / chunks, 1 + count * (a + 1) / chunks};
  }
};

using block_handle = apgas::place_local<block>;

std::uint64_t first_point(const params& prm, place_id p) { return 1 + prm.n * p / apgas::places(); }

/// Sets up this place's block: its points' initial values, its ghost cells.
struct setup_block {
  void operator()(block_handle h, params prm) const {
    block& b = h.get();
    const place_id p = apgas::here();
    b.prm = prm;
    b.first = first_point(prm, p);
    b.count = first_point(prm, p + 1) - b.first;
    b.chunks = static_cast<std::uint32_t>(std::min<std::uint64_t>(prm.activities, b.count));
    b.chunk_change.assign(b.chunks, 0.0);
    // The ghost cells start as the neighbours' points (or the fixed ends) start.
    for (auto& v : b.buf) {
      v.resize(b.count + 2);
      for (std::uint64_t i = 0; i <= b.count + 1; ++i) v[i] = initial_value(b.first + i - 1, prm.n);
    }
    b.iterations = 0;
    b.change = 0;
  }
};

/// This place's values after the run.
struct block_values {
  std::vector<double> operator()(block_handle h) const {
    const block& b = h.get();
    const auto& v = b.buf[b.iterations % 2];
    return {v.begin() + 1, v.begin() + static_cast<long>(b.count) + 1};
  }
};

/// Stores a neighbouring place's end point in a ghost cell of buf[parity]: the right one if
/// `right` (it came from the place after this one), else the left one.
inline void store_ghost(block_handle h, std::uint8_t parity, bool right, double v) {
  block& b = h.get();
  b.buf[parity][right ? b.count + 1 : 0] = v;
}
struct put_ghost {
  void operator()(block_handle h, std::uint8_t parity, bool right, double v) const {
    store_ghost(h, parity, right, v);
  }
};
struct put_ghost_clocked { // registered on the clock: the phase waits for it
  void operator()(apgas::clock, block_handle h, std::uint8_t parity, bool right, double v) const {
    store_ghost(h, parity, right, v);
  }
};

/// What a chunk [lo, hi) owes the neighbouring places in phase t: the block's first point (to
/// the place before) and last point (to the place after), computed first so that they leave
/// at once. Narrows [lo, hi) to the points left to compute.
struct ends_out {
  double change = 0;
  bool to_before = false;
  bool to_after = false;
};
ends_out compute_ends(block& b, std::uint64_t t, std::uint64_t& lo, std::uint64_t& hi) {
  const double* old = b.buf[t % 2].data();
  double* next = b.buf[(t + 1) % 2].data();
  const place_id p = apgas::here();
  ends_out out;
  if (lo == 1 && p > 0) {
    out.change = update(old, next, 1);
    out.to_before = true;
    ++lo;
  }
  if (hi == b.count + 1 && p + 1 < apgas::places()) {
    if (hi > lo) { // else it is point 1, done above
      out.change = std::max(out.change, update(old, next, b.count));
      --hi;
    }
    out.to_after = true;
  }
  return out;
}

// ---- with a clock ------------------------------------------------------------------------------

/// One chunk's activity: every phase of the run.
task<> chunk_phases(apgas::clock c, block_handle h, std::uint32_t a) {
  block& b = h.get();
  const place_id p = apgas::here();
  const auto [chunk_lo, chunk_hi] = b.chunk(a);
  for (std::uint64_t t = 0;;) {
    std::uint64_t lo = chunk_lo;
    std::uint64_t hi = chunk_hi;
    const ends_out out = compute_ends(b, t, lo, hi);
    const auto parity = static_cast<std::uint8_t>((t + 1) % 2);
    const double* next = b.buf[parity].data();
    if (out.to_before)
      co_await apgas::async_at(p - 1, apgas::clocked(c), put_ghost_clocked{}, h, parity, true,
                               next[1]);
    if (out.to_after)
      co_await apgas::async_at(p + 1, apgas::clocked(c), put_ghost_clocked{}, h, parity, false,
                               next[b.count]);
    const double change =
        std::max(out.change, update_range(b.buf[t % 2].data(), b.buf[parity].data(), lo, hi));
    const double most = co_await c.advance(apgas::max, change);
    ++t;
    if (most < b.prm.epsilon || t == b.prm.max_iterations) {
      if (a == 0) {
        b.iterations = t;
        b.change = most;
      }
      co_return;
    }
  }
}

/// Starts the chunks' activities of this place, registered on the clock.
struct start_chunks {
  task<> operator()(apgas::clock mine, block_handle h) const {
    const std::uint32_t chunks = h.get().chunks;
    for (std::uint32_t a = 0; a < chunks; ++a)
      co_await apgas::async(apgas::clocked(mine),
                            [h, a](apgas::clock c) { return chunk_phases(std::move(c), h, a); });
  } // this activity's registration drops here: the phases wait only for the chunks
};

task<> solve_clocked(block_handle h, apgas::signal s) {
  co_await apgas::finish([&]() -> task<> {
    apgas::clock c = co_await apgas::clock::make(s);
    for (place_id p = 0; p < apgas::places(); ++p)
      co_await apgas::async_at(p, apgas::clocked(c), start_chunks{}, h);
  }); // the maker's registration drops as the finish body ends
}

// ---- with a finish per phase -------------------------------------------------------------------

using change_slots = std::vector<double>; ///< at place 0: each place's largest change

struct store_change {
  void operator()(apgas::global_ref<change_slots> slots, place_id p, double change) const {
    (*slots)[p] = change;
  }
};

/// Phase t at this place: the end points first (sent at once), the chunks in parallel, then
/// the largest change to place 0.
struct place_phase {
  task<> operator()(block_handle h, std::uint64_t t, apgas::global_ref<change_slots> slots) const {
    block& b = h.get();
    const place_id p = apgas::here();
    std::uint64_t lo = 1;
    std::uint64_t hi = b.count + 1;
    const ends_out out = compute_ends(b, t, lo, hi);
    const auto parity = static_cast<std::uint8_t>((t + 1) % 2);
    const double* next = b.buf[parity].data();
    if (out.to_before) co_await apgas::async_at(p - 1, put_ghost{}, h, parity, true, next[1]);
    if (out.to_after) co_await apgas::async_at(p + 1, put_ghost{}, h, parity, false, next[b.count]);
    co_await apgas::finish([&]() -> task<> {
      for (std::uint32_t a = 0; a < b.chunks; ++a) {
        const auto [c_lo, c_hi] = b.chunk(a);
        const std::uint64_t from = std::max(c_lo, lo);
        const std::uint64_t to = std::min(c_hi, hi);
        co_await apgas::async([&b, a, t, from, to] {
          b.chunk_change[a] =
              from < to ? update_range(b.buf[t % 2].data(), b.buf[(t + 1) % 2].data(), from, to)
                        : 0.0;
        });
      }
    });
    double change = out.change;
    for (double c : b.chunk_change) change = std::max(change, c);
    co_await apgas::async_at(slots.home(), store_change{}, slots, p, change);
  }
};

struct record_end { // every place keeps the number of phases (block_values reads it)
  void operator()(block_handle h, std::uint64_t iterations, double change) const {
    block& b = h.get();
    b.iterations = iterations;
    b.change = change;
  }
};

/// Returns the number of phases and the largest change of the last.
task<std::pair<std::uint64_t, double>> solve_finish(block_handle h, const params& prm) {
  change_slots slots(apgas::places(), 0.0);
  const apgas::global_ref<change_slots> slots_ref(slots);
  std::uint64_t t = 0;
  double most = 0;
  for (;;) {
    co_await apgas::finish([&]() -> task<> {
      for (place_id p = 0; p < apgas::places(); ++p)
        co_await apgas::async_at(p, place_phase{}, h, t, slots_ref);
    });
    most = *std::max_element(slots.begin(), slots.end());
    ++t;
    if (most < prm.epsilon || t == prm.max_iterations) break;
  }
  co_return std::pair{t, most};
}

// ---- a run -------------------------------------------------------------------------------------

struct run_result {
  double seconds = 0;
  std::uint64_t iterations = 0;
  double change = 0;

  template <class A>
  void serialize(A& a) {
    a& seconds& iterations& change;
  }
};

/// Sets up the blocks, solves (timed), gathers the values into `*values` at place 0 (they stay
/// there: run() sends its result to every place).
task<run_result> run_averaging(params prm, bool clocked, apgas::signal s,
                               std::vector<double>* values) {
  const block_handle h = co_await block_handle::make([](place_id) { return block{}; });
  co_await apgas::for_each_place(setup_block{}, h, prm);
  const auto start = std::chrono::steady_clock::now();
  std::pair<std::uint64_t, double> end{};
  if (clocked) co_await solve_clocked(h, s);
  else end = co_await solve_finish(h, prm);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  if (!clocked) // the clocked activities record it themselves
    co_await apgas::for_each_place(record_end{}, h, end.first, end.second);
  run_result r;
  r.seconds = took.count();
  r.iterations = h.get().iterations;
  r.change = h.get().change;
  values->clear();
  values->reserve(prm.n);
  for (place_id p = 0; p < apgas::places(); ++p) {
    const std::vector<double> part = co_await apgas::at(p, block_values{}, h);
    values->insert(values->end(), part.begin(), part.end());
  }
  co_await h.destroy();
  co_return r;
}

/// Empty if the run's phases and values match the reference, else what differs.
std::string compare(std::string_view who, std::uint64_t iterations,
                    const std::vector<double>& values, std::uint64_t ref_iterations,
                    const std::vector<double>& ref_values, std::string_view reference) {
  if (iterations != ref_iterations)
    return fmt::format("{}: {} phases, {} gives {}", who, iterations, reference, ref_iterations);
  if (values.size() != ref_values.size())
    return fmt::format("{}: {} values, {} gives {}", who, values.size(), reference,
                       ref_values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::fabs(values[i] - ref_values[i]) > k_tolerance)
      return fmt::format("{}: point {} is {}, {} gives {}", who, i + 1, values[i], reference,
                         ref_values[i]);
  }
  return {};
}

} // namespace

int main(int argc, char** argv) {
  params prm;
  prm.n = k_default_n;
  prm.epsilon = k_default_epsilon;
  prm.max_iterations = k_default_max_iterations;
  prm.activities = k_default_activities;
  apgas_apps::sync_mode sync = apgas_apps::sync_mode::clock;
  apgas::signal signal = apgas::signal::lazy;
  apgas_apps::cli cli(
      "averaging",
      "One-dimensional iterative averaging (the uClocks paper's kernel): N points between two\n"
      "fixed ends (0 and 1; they start at 0 and 1 too), in one block per place, each block in A "
      "chunks of one activity\n"
      "each. Every phase each point becomes the average of its neighbours, until the largest\n"
      "change is below epsilon: with one clock whose advance carries the largest change\n"
      "(--sync clock), or with one finish per phase (--sync finish). Checked against the\n"
      "sequential loop (the same phases, the same values).");
  cli.option("--n", "N", fmt::format("points (default {})", k_default_n), prm.n, std::uint64_t{1},
             std::uint64_t{1} << 32);
  cli.option("--epsilon", "e",
             fmt::format("stop when a phase changes no point by e or more (default {})",
                         k_default_epsilon),
             prm.epsilon, 0.0, 1.0);
  cli.option("--max-iterations", "k",
             fmt::format("stop after k phases anyway (default {})", k_default_max_iterations),
             prm.max_iterations, std::uint64_t{1}, std::uint64_t{1} << 40);
  cli.option("--activities", "A",
             fmt::format("activities (chunks) per place (default {})", k_default_activities),
             prm.activities, std::uint32_t{1}, std::uint32_t{1} << 20);
  apgas_apps::add_sync_flag(cli, sync);
  apgas_apps::add_signal_flag(cli, signal);
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    if (prm.n < rt.places())
      throw apgas::usage_error(
          fmt::format("--n {} is fewer points than places ({})", prm.n, rt.places()));
    apgas_apps::report r;
    r.title = fmt::format("averaging({}) phases", prm.n);
    run_result first;
    std::vector<double> first_values;
    std::vector<double> values;
    bool have_first = false;
    const auto run = [&](bool clocked) {
      const run_result got = rt.run(run_averaging(prm, clocked, signal, &values));
      if (!have_first) {
        first = got;
        first_values.swap(values);
        have_first = true;
      } else if (r.failure.empty() && rt.here() == 0) {
        r.failure = compare(clocked ? "clock" : "finish", got.iterations, values, first.iterations,
                            first_values, "the first run");
      }
      return got.seconds;
    };
    const apgas_apps::sync_times times = apgas_apps::time_modes(sync, flags.repeat, run);
    std::vector<double> seq_values;
    const auto seq = apgas_apps::run_seq_and_compare(
        r, flags, first.iterations, "averaging_seq",
        [&seq_values](const params& in) {
          seq_result s = averaging_seq(in);
          seq_values = std::move(s.values);
          return s.iterations;
        },
        prm);
    if (seq && r.failure.empty())
      r.failure =
          compare("the run", first.iterations, first_values, *seq, seq_values, "averaging_seq");
    apgas_apps::report_sync(r, times);
    r.result = first.iterations;
    r.verified = r.failure.empty();
    r.work = apgas_apps::work_amount{static_cast<double>(prm.n * first.iterations), "updates"};
    r.details.push_back(fmt::format("{} points over {} place(s) x {} activities, {} phases, last "
                                    "change {:.3g} (epsilon {})",
                                    prm.n, rt.places(), prm.activities, first.iterations,
                                    first.change, prm.epsilon));
    r.extra.add("n", prm.n).add("epsilon", prm.epsilon).add("activities", prm.activities);
    r.extra.add("iterations", first.iterations).add("last_change", first.change);
    r.extra.add("signal", signal == apgas::signal::lazy ? "lazy" : "eager");
    return r;
  });
}
