/// @file What the stencil apps (averaging, heat) share: Jacobi iteration over a distributed
/// array with one ghost cell around each place's part, its phases kept by one clock or by one
/// finish per phase, checked against the sequential loop. An app describes its array in a
/// kernel type K and calls stencil_main<K>; heat/main.cpp and averaging/main.cpp are the two.
///
///     struct K {
///       using array = apgas::dist_array<double>;   // or dist_array_2d<double>
///       static task<array> make(std::uint64_t n);  // collective: the initial values, and
///                                                  // the fixed borders in the edges' ghosts
///       static std::size_t extent(const array& a); // the local part's rows (points)
///       static double update(const array& from, array& to, std::size_t lo, std::size_t hi);
///                                                  // local rows [lo, hi); the largest change
///       static task<std::vector<double>> values(const array& a, std::uint64_t n); // all
///       static stencil_seq_result seq(const stencil_params& prm); // the sequential loop
///       // and the names and defaults of the command line (see heat/main.cpp)
///     };
///
/// Each place holds its parts of two arrays: phase t reads array t % 2 and writes array
/// (t + 1) % 2, in `--activities` chunks of rows, one activity each. Chunk 0 computes the
/// part's first and last rows before its own and sends them with the written array's
/// exchange_halo(), which returns once the neighbours' rows have arrived: when a phase ends,
/// the next one's ghosts are in place. With a clock (--sync clock) the chunks' activities
/// live through every phase, at every place registered on one clock, and each phase ends with
/// `co_await c.advance(apgas::max, change)`, whose value is the convergence test. With a
/// finish per phase (--sync finish) place 0 starts each phase at every place with
/// for_each_place; there the chunks run under a finish, and a team reduction brings the
/// largest change to place 0.
///
/// Checkpoints (--checkpoint DIR --checkpoint-every S, --resume DIR) are of the job's first
/// run: after phase t, the array that holds its values (t % 2) and the last change, saved by
/// apgas::phase_checkpoint. With a clock, the phase's reduction also carries whether any place's
/// interval has passed, so that every place saves after the same phase: chunk 0 of each place
/// saves while the other chunks go on with the next phase, which only reads that array. With a
/// finish, place 0 decides between two phases. A resume loads the array into the parts of
/// this job's places and goes on with the next phase, to the same values as a run that was
/// never stopped.
#pragma once

#include <apgas/clock.hpp>
#include <apgas/dist_array.hpp>
#include <apgas/phase_checkpoint.hpp>

#include "apgas_apps/cli.hpp"
#include "apgas_apps/phased.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace apgas_apps {

/// @brief What every place needs to know of a stencil run (bitwise: it travels as an argument).
struct stencil_params {
  std::uint64_t n = 0; ///< the array's side (heat) or length (averaging)
  double epsilon = 0;
  std::uint64_t max_iterations = 0;
  std::uint32_t activities = 0;
  std::uint32_t checkpointed = 0; ///< 1: this run saves checkpoints and resumes (the first)
};

/// @brief What the sequential loop gives: its phases and every value, in global order.
struct stencil_seq_result {
  std::uint64_t iterations = 0;
  std::vector<double> values;
};

namespace stencil_detail {

/// One place's share of a run: its parts of the two arrays and its chunks.
template <class K>
struct part {
  stencil_params prm;
  std::vector<typename K::array> a; ///< phase t reads a[t % 2] and writes a[(t + 1) % 2]
  std::uint32_t chunks = 0;
  std::uint64_t iterations = 0; ///< phases run, once the run is over (place 0 at least)
  double change = 0;            ///< the largest change of the last phase
  std::optional<apgas::phase_checkpoint> ck; ///< the checkpointed run's
  std::uint64_t first_phase = 0;             ///< phases a resumed checkpoint had done

  /// Chunk c's local rows, [lo, hi).
  std::pair<std::size_t, std::size_t> chunk(std::uint32_t c) const {
    const std::size_t rows = K::extent(a[0]);
    return {rows * c / chunks, rows * (c + 1) / chunks};
  }
};

template <class K>
using part_handle = apgas::place_local<part<K>>;

/// Makes this place's parts (collective), loads a resumed checkpoint, and fills the first
/// phase's ghosts.
template <class K>
struct setup {
  apgas::task<> operator()(part_handle<K> h, stencil_params prm) const {
    part<K>& s = h.get();
    s.prm = prm;
    for (int i = 0; i < 2; ++i) s.a.push_back(co_await K::make(prm.n));
    s.chunks = static_cast<std::uint32_t>(std::min<std::size_t>(prm.activities, K::extent(s.a[0])));
    if (prm.checkpointed != 0) {
      // Named, never temporaries inside a co_await (GCC 12 destroys those twice).
      const apgas::team all = apgas::team::world();
      const std::string program(K::k_name);
      s.ck = co_await apgas::phase_checkpoint::make(all, program, prm.n, prm.epsilon,
                                                    prm.max_iterations);
      if (s.ck->resuming()) {
        s.first_phase = s.ck->phase();
        auto values = apgas::saved("values", s.a[s.first_phase % 2]);
        auto change = apgas::saved("change", s.change);
        co_await s.ck->load(values, change);
      }
    }
    co_await s.a[s.first_phase % 2].exchange_halo();
  }
};

/// After phase t (the values in array t % 2): this place's part of the checkpoint.
template <class K>
apgas::task<> save_phase(part<K>& s, std::uint64_t t, double change) {
  auto values = apgas::saved("values", s.a[t % 2]);
  auto last = apgas::saved("change", change);
  co_await s.ck->save(t, values, last);
}

/// Phase t of chunk c: its largest change. Chunk 0 starts with the part's end rows and their
/// exchange, so that they leave before the bulk of the work; the last chunk leaves its last
/// row to chunk 0.
template <class K>
apgas::task<double> chunk_step(part<K>& s, std::uint64_t t, std::uint32_t c) {
  const typename K::array& from = s.a[t % 2];
  typename K::array& to = s.a[(t + 1) % 2];
  const std::size_t rows = K::extent(from);
  auto [lo, hi] = s.chunk(c);
  double change = 0;
  if (c == 0) {
    change = K::update(from, to, 0, 1);
    if (rows > 1) change = std::max(change, K::update(from, to, rows - 1, rows));
    co_await to.exchange_halo();
    lo = 1;
  }
  if (c + 1 == s.chunks) hi = rows - 1;
  if (lo < hi) change = std::max(change, K::update(from, to, lo, hi));
  co_return change;
}

// ---- with a clock ------------------------------------------------------------------------------

/// A phase's largest change, and whether a place's checkpoint interval has passed: what its
/// clock reduces.
struct phase_end {
  double change = 0;
  std::uint64_t checkpoint = 0;
};
struct phase_end_max {
  phase_end operator()(const phase_end& a, const phase_end& b) const {
    return {std::max(a.change, b.change), std::max(a.checkpoint, b.checkpoint)};
  }
};

/// One chunk's activity: every phase of the run (the clock's phases, which go on from those a
/// resumed checkpoint had done).
template <class K>
apgas::task<> chunk_phases(apgas::clock c, part_handle<K> h, std::uint32_t chunk) {
  part<K>& s = h.get();
  for (;;) {
    const std::uint64_t t = c.phase();
    phase_end mine{co_await chunk_step(s, t - 1, chunk), 0};
    if (chunk == 0 && s.ck && s.ck->interval_passed()) mine.checkpoint = 1;
    const phase_end all = co_await c.advance(phase_end_max{}, mine);
    if (all.change < s.prm.epsilon || t == s.prm.max_iterations) {
      if (chunk == 0) s.iterations = t, s.change = all.change;
      co_return;
    }
    if (chunk == 0 && all.checkpoint != 0) co_await save_phase(s, t, all.change);
  }
}

/// Starts the chunks' activities of this place, registered on the clock.
template <class K>
struct start_chunks {
  apgas::task<> operator()(apgas::clock mine, part_handle<K> h) const {
    for (std::uint32_t a = 0; a < h.get().chunks; ++a)
      co_await apgas::async(apgas::clocked(mine),
                            [h, a](apgas::clock c) { return chunk_phases<K>(std::move(c), h, a); });
  } // this activity's registration drops here: the phases wait only for the chunks
};

template <class K>
apgas::task<> solve_clocked(part_handle<K> h, apgas::signal s) {
  co_await apgas::finish([&]() -> apgas::task<> {
    apgas::clock c = co_await apgas::clock::make(s, h.get().first_phase + 1);
    for (apgas::place_id p = 0; p < apgas::places(); ++p)
      co_await apgas::async_at(p, apgas::clocked(c), start_chunks<K>{}, h);
  }); // the maker's registration drops as the finish body ends
}

// ---- with a finish per phase -------------------------------------------------------------------

template <class K>
apgas::task<> chunk_into(part<K>& s, std::uint64_t t, std::uint32_t c, double& change) {
  change = co_await chunk_step(s, t, c);
}

/// Phase t at this place: the chunks under a finish, then the largest change of every place,
/// at place 0 (which decides whether to go on).
template <class K>
struct place_phase {
  apgas::task<> operator()(part_handle<K> h, std::uint64_t t) const {
    part<K>& s = h.get();
    std::vector<double> change(s.chunks, 0.0);
    co_await apgas::finish([&]() -> apgas::task<> {
      for (std::uint32_t a = 0; a < s.chunks; ++a)
        co_await apgas::async(chunk_into(s, t, a, change[a]));
    });
    const double most = *std::max_element(change.begin(), change.end());
    if (const auto all = co_await s.a[0].members().reduce(most, apgas::max, 0)) s.change = *all;
  }
};

/// A checkpoint after phase t, at this place.
template <class K>
struct place_save {
  apgas::task<> operator()(part_handle<K> h, std::uint64_t t, double change) const {
    co_await save_phase(h.get(), t, change);
  }
};

template <class K>
apgas::task<> solve_finish(part_handle<K> h, const stencil_params& prm) {
  part<K>& s = h.get();
  std::uint64_t t = s.first_phase;
  for (;;) {
    co_await apgas::for_each_place(place_phase<K>{}, h, t++);
    if (s.change < prm.epsilon || t >= prm.max_iterations) break;
    if (s.ck && s.ck->interval_passed())
      co_await apgas::for_each_place(place_save<K>{}, h, t, s.change);
  }
  s.iterations = t;
}

// ---- a run -------------------------------------------------------------------------------------

struct run_result {
  double seconds = 0;
  std::uint64_t iterations = 0;
  double change = 0;
  std::string resumed_from;      ///< the checkpoint resumed from, if any
  std::uint64_t first_phase = 0; ///< the phases it had done
  std::uint64_t checkpoints = 0; ///< checkpoints saved
  double save_seconds = 0;       ///< place 0's time in them
  double load_seconds = 0;       ///< place 0's time loading the resumed one

  template <class A>
  void serialize(A& a) {
    a& seconds& iterations& change& resumed_from& first_phase& checkpoints& save_seconds&
        load_seconds;
  }
};

/// Makes the arrays, solves (timed), reads every value into `*values` at place 0 (they stay
/// there: run() sends its result to every place).
template <class K>
apgas::task<run_result> run(stencil_params prm, bool clocked, apgas::signal sig,
                            std::vector<double>* values) {
  const auto h = co_await part_handle<K>::make([](apgas::place_id) { return part<K>{}; });
  co_await apgas::for_each_place(setup<K>{}, h, prm);
  const auto start = std::chrono::steady_clock::now();
  if (clocked) co_await solve_clocked<K>(h, sig);
  else co_await solve_finish<K>(h, prm);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const part<K>& s = h.get();
  run_result r;
  r.seconds = took.count();
  r.iterations = s.iterations;
  r.change = s.change;
  if (s.ck) {
    r.resumed_from = s.ck->resumed_path();
    r.first_phase = s.first_phase;
    r.checkpoints = s.ck->saved_count();
    r.save_seconds = s.ck->save_seconds();
    r.load_seconds = s.ck->load_seconds();
  }
  *values = co_await K::values(s.a[s.iterations % 2], prm.n);
  co_await h.destroy(); // after every read of the arrays
  co_return r;
}

/// Empty if the run's phases and values match the reference's, else what differs.
template <class K>
std::string compare(std::string_view who, std::uint64_t iterations,
                    const std::vector<double>& values, std::uint64_t ref_iterations,
                    const std::vector<double>& ref_values, std::string_view reference,
                    std::uint64_t n) {
  constexpr double k_tolerance = 1e-12; // the values are computed by the same expressions
  if (iterations != ref_iterations)
    return fmt::format("{}: {} phases, {} gives {}", who, iterations, reference, ref_iterations);
  if (values.size() != ref_values.size())
    return fmt::format("{}: {} values, {} gives {}", who, values.size(), reference,
                       ref_values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    if (std::fabs(values[i] - ref_values[i]) > k_tolerance)
      return fmt::format("{}: {} is {}, {} gives {}", who, K::where(i, n), values[i], reference,
                         ref_values[i]);
  return {};
}

} // namespace stencil_detail

/// @brief The app's main: its command line, the runs (--sync), their checks and the report.
template <class K>
int stencil_main(int argc, char** argv) {
  namespace sd = stencil_detail;
  stencil_params prm{K::k_default_n, K::k_default_epsilon, 1'000'000, 8, 0};
  sync_mode sync = sync_mode::clock;
  apgas::signal signal = apgas::signal::lazy;
  cli c(std::string(K::k_name), std::string(K::k_summary));
  c.option("--n", "N", fmt::format("{} (default {})", K::k_n_help, prm.n), prm.n, std::uint64_t{1},
           K::k_max_n);
  c.option("--epsilon", "e",
           fmt::format("stop when a phase changes no {} by e or more (default {})", K::k_cell,
                       prm.epsilon),
           prm.epsilon, 0.0, 1.0);
  c.option("--max-iterations", "k",
           fmt::format("stop after k phases anyway (default {})", prm.max_iterations),
           prm.max_iterations, std::uint64_t{1}, std::uint64_t{1} << 40);
  c.option(
      "--activities", "A",
      fmt::format("activities (chunks of {}) per place (default {})", K::k_rows, prm.activities),
      prm.activities, std::uint32_t{1}, std::uint32_t{1} << 20);
  add_sync_flag(c, sync);
  add_signal_flag(c, signal);
  return c.run(argc, argv, [&](apgas::runtime& rt, const common_flags& flags) {
    if (prm.n < rt.places())
      throw apgas::usage_error(
          fmt::format("--n {} is fewer {} than places ({})", prm.n, K::k_rows, rt.places()));
    report r;
    r.title = fmt::format("{}({}) phases", K::k_name, K::shape(prm.n));
    sd::run_result first;
    std::vector<double> first_values;
    std::vector<double> values;
    bool have_first = false;
    const auto run = [&](bool clocked) {
      stencil_params this_run = prm;
      this_run.checkpointed = have_first ? 0 : 1; // the job's first run only
      const sd::run_result got = rt.run(sd::run<K>(this_run, clocked, signal, &values));
      if (!have_first) {
        first = got;
        first_values.swap(values);
        have_first = true;
      } else if (r.failure.empty() && rt.here() == 0) {
        r.failure = sd::compare<K>(clocked ? "clock" : "finish", got.iterations, values,
                                   first.iterations, first_values, "the first run", prm.n);
      }
      return got.seconds;
    };
    const sync_times times = time_modes(sync, flags.repeat, run);
    std::vector<double> seq_values;
    const auto seq = run_seq_and_compare(
        r, flags, first.iterations, K::k_seq_name,
        [&seq_values](const stencil_params& in) {
          stencil_seq_result s = K::seq(in);
          seq_values = std::move(s.values);
          return s.iterations;
        },
        prm);
    if (seq && r.failure.empty())
      r.failure = sd::compare<K>("the run", first.iterations, first_values, *seq, seq_values,
                                 K::k_seq_name, prm.n);
    const bool resumed = !first.resumed_from.empty();
    // A resumed run did only the phases after its checkpoint: its rate counts those, and a
    // speedup over the whole sequential loop, or a ratio to a whole run of the other mode
    // (--sync both), would mean nothing. The other runs are checked against it, not timed.
    if (resumed) {
      r.seconds = first.seconds;
      r.seq_seconds.reset();
    } else {
      report_sync(r, times);
    }
    r.result = first.iterations;
    r.verified = r.failure.empty();
    const std::uint64_t phases_run = first.iterations - first.first_phase;
    r.work = work_amount{K::cells(prm.n) * static_cast<double>(phases_run), "updates"};
    r.details.push_back(fmt::format("{} {} over {} place(s) x {} activities, {} phases, last "
                                    "change {:.3g} (epsilon {})",
                                    K::shape(prm.n), K::k_cell_plural, rt.places(), prm.activities,
                                    first.iterations, first.change, prm.epsilon));
    if (resumed)
      r.details.push_back(fmt::format("resumed from {} after phase {} (the time is of the "
                                      "resumed run alone)",
                                      first.resumed_from, first.first_phase));
    if (first.checkpoints != 0)
      r.details.push_back(fmt::format("{} checkpoint(s) saved", first.checkpoints));
    r.extra.add("n", prm.n).add("epsilon", prm.epsilon).add("activities", prm.activities);
    r.extra.add("checkpoints", first.checkpoints).add("resumed_phase", first.first_phase);
    r.extra.add("checkpoint_save_seconds", first.save_seconds)
        .add("resume_load_seconds", first.load_seconds);
    r.extra.add("iterations", first.iterations).add("last_change", first.change);
    r.extra.add("signal", signal == apgas::signal::lazy ? "lazy" : "eager");
    return r;
  });
}

} // namespace apgas_apps
