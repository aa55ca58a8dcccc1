// heat [--n N] [--epsilon e] [--max-iterations k] [--activities A] [--sync clock|finish|both]:
// 2D heat diffusion by Jacobi iteration over places. An N x N grid inside fixed borders (the
// top one at 1, the others at 0), its rows in one block per place, each block cut into A
// chunks of rows, one activity each. Every phase each cell becomes the average of its four
// neighbours' previous values, until the largest change of a phase is below epsilon.
//
// With a clock (--sync clock): one activity per chunk for the whole run, registered on one
// clock; each phase ends with `co_await c.advance(apgas::max, change)`, whose value is the
// convergence test. A block's first and last rows go to the neighbouring places' halo rows as
// clocked async_ats: the phase cannot end before they have arrived.
// With a finish per phase (--sync finish): each phase, place 0 starts one activity per place
// under a finish; it starts one activity per chunk, and sends its halo rows and its largest
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
#include <utility>
#include <vector>

namespace {

using apgas::place_id;
using apgas::task;

constexpr std::uint64_t k_default_n = 256;
constexpr double k_default_epsilon = 1e-3; // about 250 phases at the default size
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

/// Grid rows 0 .. n + 1, each of n + 2 cells (columns 0 and n + 1 are the side borders).
/// Value of a cell of global row `row` before the first phase: the top border (row 0) is 1,
/// every other cell 0.
double initial_value(std::uint64_t row) { return row == 0 ? 1.0 : 0.0; }

/// Updates rows [lo, hi) of a grid `width` cells wide from `old` into `next` (the same
/// layout); returns the largest change. The sequential loop and both parallel versions compute
/// every value with this, so they agree exactly.
double update_rows(const double* old, double* next, std::uint64_t width, std::uint64_t lo,
                   std::uint64_t hi) {
  double most = 0;
  for (std::uint64_t r = lo; r < hi; ++r) {
    const double* up = old + (r - 1) * width;
    const double* mid = old + r * width;
    const double* down = old + (r + 1) * width;
    double* out = next + r * width;
    for (std::uint64_t c = 1; c + 1 < width; ++c) {
      out[c] = 0.25 * (up[c] + down[c] + mid[c - 1] + mid[c + 1]);
      most = std::max(most, std::fabs(out[c] - mid[c]));
    }
  }
  return most;
}

// ---- sequential --------------------------------------------------------------------------------

struct seq_result {
  std::uint64_t iterations = 0;
  std::vector<double> values; ///< rows 1 .. n, columns 1 .. n
};

seq_result heat_seq(const params& prm) {
  const std::uint64_t width = prm.n + 2;
  std::array<std::vector<double>, 2> buf;
  for (auto& b : buf) {
    b.assign(width * width, 0.0);
    for (std::uint64_t r = 0; r < width; ++r)
      std::fill_n(b.begin() + static_cast<long>(r * width), width, initial_value(r));
  }
  std::uint64_t t = 0;
  for (;;) {
    const double most =
        update_rows(buf[t % 2].data(), buf[(t + 1) % 2].data(), width, 1, prm.n + 1);
    ++t;
    if (most < prm.epsilon || t == prm.max_iterations) break;
  }
  seq_result r;
  r.iterations = t;
  r.values.reserve(prm.n * prm.n);
  for (std::uint64_t row = 1; row <= prm.n; ++row) {
    const auto from = buf[t % 2].begin() + static_cast<long>(row * width + 1);
    r.values.insert(r.values.end(), from, from + static_cast<long>(prm.n));
  }
  return r;
}

// ---- one place's block -------------------------------------------------------------------------

/// The rows of one place: local rows 1 .. count are global rows first .. first + count - 1;
/// local rows 0 and count + 1 are halo rows (the neighbouring places' end rows, or the fixed
/// borders). Phase t reads buf[t % 2] and writes buf[(t + 1) % 2]: a neighbour's end row of
/// phase t goes into the halo row of buf[(t + 1) % 2], which this place reads only in phase
/// t + 1.
struct block {
  params prm;
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  std::uint64_t width = 0;
  std::uint32_t chunks = 0;
  std::array<std::vector<double>, 2> buf;
  std::vector<double> chunk_change; ///< --sync finish: each chunk's largest change
  std::uint64_t iterations = 0;     ///< phases run, once the run is over
  double change = 0;                ///< the largest change of the last phase

  /// Chunk a's rows, [lo, hi) in local rows.
  std::pair<std::uint64_t, std::uint64_t> chunk(std::uint32_t a) const {
    return {1 + count * a / chunks, 1 + count * (a + 1) / chunks};
  }
  /// Interior cells (columns 1 .. n) of local row r of buf[parity].
  double* row(std::uint64_t parity, std::uint64_t r) { return buf[parity].data() + r * width + 1; }
};

using block_handle = apgas::place_local<block>;

std::uint64_t first_row(const params& prm, place_id p) { return 1 + prm.n * p / apgas::places(); }

/// Sets up this place's block: its rows' initial values, its halo rows.
struct setup_block {
  void operator()(block_handle h, params prm) const {
    block& b = h.get();
    const place_id p = apgas::here();
    b.prm = prm;
    b.first = first_row(prm, p);
    b.count = first_row(prm, p + 1) - b.first;
    b.width = prm.n + 2;
    b.chunks = static_cast<std::uint32_t>(std::min<std::uint64_t>(prm.activities, b.count));
    b.chunk_change.assign(b.chunks, 0.0);
    // The halo rows start as the neighbours' rows (or the fixed borders) start.
    for (auto& v : b.buf) {
      v.resize((b.count + 2) * b.width);
      for (std::uint64_t r = 0; r <= b.count + 1; ++r)
        std::fill_n(v.begin() + static_cast<long>(r * b.width), b.width,
                    initial_value(b.first + r - 1));
    }
    b.iterations = 0;
    b.change = 0;
  }
};

/// This place's values after the run, row after row.
struct block_values {
  std::vector<double> operator()(block_handle h) const {
    block& b = h.get();
    std::vector<double> v;
    v.reserve(b.count * b.prm.n);
    for (std::uint64_t r = 1; r <= b.count; ++r) {
      const double* from = b.row(b.iterations % 2, r);
      v.insert(v.end(), from, from + b.prm.n);
    }
    return v;
  }
};

/// Stores a neighbouring place's end row in a halo row of buf[parity]: the bottom one if
/// `from_after` (it came from the place after this one), else the top one.
inline void store_halo(block_handle h, std::uint8_t parity, bool from_after,
                       const std::vector<double>& cells) {
  block& b = h.get();
  std::copy(cells.begin(), cells.end(), b.row(parity, from_after ? b.count + 1 : 0));
}
struct put_halo {
  void operator()(block_handle h, std::uint8_t parity, bool from_after,
                  const std::vector<double>& cells) const {
    store_halo(h, parity, from_after, cells);
  }
};
struct put_halo_clocked { // registered on the clock: the phase waits for it
  void operator()(apgas::clock, block_handle h, std::uint8_t parity, bool from_after,
                  const std::vector<double>& cells) const {
    store_halo(h, parity, from_after, cells);
  }
};

/// What a chunk [lo, hi) owes the neighbouring places in phase t: the block's first row (to
/// the place before) and last row (to the place after), computed first so that they leave at
/// once. Narrows [lo, hi) to the rows left to compute.
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
    out.change = update_rows(old, next, b.width, 1, 2);
    out.to_before = true;
    ++lo;
  }
  if (hi == b.count + 1 && p + 1 < apgas::places()) {
    if (hi > lo) { // else it is row 1, done above
      out.change = std::max(out.change, update_rows(old, next, b.width, b.count, b.count + 1));
      --hi;
    }
    out.to_after = true;
  }
  return out;
}

/// Local row r of buf[parity], interior cells, as a message.
std::vector<double> row_of(block& b, std::uint8_t parity, std::uint64_t r) {
  const double* from = b.row(parity, r);
  return {from, from + b.prm.n};
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
    if (out.to_before)
      co_await apgas::async_at(p - 1, apgas::clocked(c), put_halo_clocked{}, h, parity, true,
                               row_of(b, parity, 1));
    if (out.to_after)
      co_await apgas::async_at(p + 1, apgas::clocked(c), put_halo_clocked{}, h, parity, false,
                               row_of(b, parity, b.count));
    const double change = std::max(
        out.change, update_rows(b.buf[t % 2].data(), b.buf[parity].data(), b.width, lo, hi));
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

/// Phase t at this place: the end rows first (sent at once), the chunks in parallel, then the
/// largest change to place 0.
struct place_phase {
  task<> operator()(block_handle h, std::uint64_t t, apgas::global_ref<change_slots> slots) const {
    block& b = h.get();
    const place_id p = apgas::here();
    std::uint64_t lo = 1;
    std::uint64_t hi = b.count + 1;
    const ends_out out = compute_ends(b, t, lo, hi);
    const auto parity = static_cast<std::uint8_t>((t + 1) % 2);
    if (out.to_before)
      co_await apgas::async_at(p - 1, put_halo{}, h, parity, true, row_of(b, parity, 1));
    if (out.to_after)
      co_await apgas::async_at(p + 1, put_halo{}, h, parity, false, row_of(b, parity, b.count));
    co_await apgas::finish([&]() -> task<> {
      for (std::uint32_t a = 0; a < b.chunks; ++a) {
        const auto [c_lo, c_hi] = b.chunk(a);
        const std::uint64_t from = std::max(c_lo, lo);
        const std::uint64_t to = std::min(c_hi, hi);
        co_await apgas::async([&b, a, t, from, to] {
          b.chunk_change[a] = from < to ? update_rows(b.buf[t % 2].data(),
                                                      b.buf[(t + 1) % 2].data(), b.width, from, to)
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
task<run_result> run_heat(params prm, bool clocked, apgas::signal s, std::vector<double>* values) {
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
  values->reserve(prm.n * prm.n);
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
                    const std::vector<double>& ref_values, std::string_view reference,
                    std::uint64_t n) {
  if (iterations != ref_iterations)
    return fmt::format("{}: {} phases, {} gives {}", who, iterations, reference, ref_iterations);
  if (values.size() != ref_values.size())
    return fmt::format("{}: {} values, {} gives {}", who, values.size(), reference,
                       ref_values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::fabs(values[i] - ref_values[i]) > k_tolerance)
      return fmt::format("{}: cell ({}, {}) is {}, {} gives {}", who, i / n + 1, i % n + 1,
                         values[i], reference, ref_values[i]);
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
      "heat",
      "2D heat diffusion by Jacobi iteration: an N x N grid inside fixed borders (the top one\n"
      "at 1, the others at 0; the grid starts at 0), its rows in one block per place, each\n"
      "block in A chunks of rows, one activity each, the end rows of the blocks exchanged\n"
      "with async_at every phase. Every phase each cell becomes the average of its four\n"
      "neighbours, until the largest change is below epsilon: with one clock whose advance\n"
      "carries the largest change (--sync clock), or with one finish per phase (--sync\n"
      "finish). Checked against the sequential loop (the same phases, the same values).");
  cli.option("--n", "N", fmt::format("grid side, in cells (default {})", k_default_n), prm.n,
             std::uint64_t{1}, std::uint64_t{1} << 16);
  cli.option(
      "--epsilon", "e",
      fmt::format("stop when a phase changes no cell by e or more (default {})", k_default_epsilon),
      prm.epsilon, 0.0, 1.0);
  cli.option("--max-iterations", "k",
             fmt::format("stop after k phases anyway (default {})", k_default_max_iterations),
             prm.max_iterations, std::uint64_t{1}, std::uint64_t{1} << 40);
  cli.option(
      "--activities", "A",
      fmt::format("activities (chunks of rows) per place (default {})", k_default_activities),
      prm.activities, std::uint32_t{1}, std::uint32_t{1} << 20);
  apgas_apps::add_sync_flag(cli, sync);
  apgas_apps::add_signal_flag(cli, signal);
  return cli.run(argc, argv, [&](apgas::runtime& rt, const apgas_apps::common_flags& flags) {
    if (prm.n < rt.places())
      throw apgas::usage_error(
          fmt::format("--n {} is fewer rows than places ({})", prm.n, rt.places()));
    apgas_apps::report r;
    r.title = fmt::format("heat({}x{}) phases", prm.n, prm.n);
    run_result first;
    std::vector<double> first_values;
    std::vector<double> values;
    bool have_first = false;
    const auto run = [&](bool clocked) {
      const run_result got = rt.run(run_heat(prm, clocked, signal, &values));
      if (!have_first) {
        first = got;
        first_values.swap(values);
        have_first = true;
      } else if (r.failure.empty() && rt.here() == 0) {
        r.failure = compare(clocked ? "clock" : "finish", got.iterations, values, first.iterations,
                            first_values, "the first run", prm.n);
      }
      return got.seconds;
    };
    const apgas_apps::sync_times times = apgas_apps::time_modes(sync, flags.repeat, run);
    std::vector<double> seq_values;
    const auto seq = apgas_apps::run_seq_and_compare(
        r, flags, first.iterations, "heat_seq",
        [&seq_values](const params& in) {
          seq_result s = heat_seq(in);
          seq_values = std::move(s.values);
          return s.iterations;
        },
        prm);
    if (seq && r.failure.empty())
      r.failure =
          compare("the run", first.iterations, first_values, *seq, seq_values, "heat_seq", prm.n);
    apgas_apps::report_sync(r, times);
    r.result = first.iterations;
    r.verified = r.failure.empty();
    r.work =
        apgas_apps::work_amount{static_cast<double>(prm.n * prm.n * first.iterations), "updates"};
    r.details.push_back(fmt::format("{}x{} cells over {} place(s) x {} activities, {} phases, "
                                    "last change {:.3g} (epsilon {})",
                                    prm.n, prm.n, rt.places(), prm.activities, first.iterations,
                                    first.change, prm.epsilon));
    r.extra.add("n", prm.n).add("epsilon", prm.epsilon).add("activities", prm.activities);
    r.extra.add("iterations", first.iterations).add("last_change", first.change);
    r.extra.add("signal", signal == apgas::signal::lazy ? "lazy" : "eager");
    return r;
  });
}
