// Random clocked programs run on the runtime and compared with the reference model of X10's
// clocks (clock_model.hpp), under mpiexec at 1, 2 and 4 places. Every activity records what
// it observes after each operation (its phases and resumed flags, errors, reductions, and the
// arrivals at its place in each phase that ended); the traces must equal the model's. Two
// programs in seven make their clocks far from phase 1 (clock::make(s, first_phase)), whose
// phases must behave as the model's, renumbered.
//
//   clock_differential_test [--programs N] [--seed S] [--long] [runtime flags]
//
// --programs: how many programs (default: 2,000, 500 under sanitizers; --long: 20,000);
// --seed: the first program's seed (each entry of the suite starts elsewhere). A mismatch
// prints the program's seed, the program, both traces, then the smallest program that still
// fails (shrunk one operation at a time). A program that runs for more than a minute is
// reported the same way, with the place's state, and ends the job.
#include <apgas/apgas.hpp>
#include <apgas/clock.hpp>
#include <apgas/detail/message_dispatcher.hpp>
#include <apgas/global_ref.hpp>

#include "../places_test_main.hpp"
#include "clock_model.hpp"
#include "clock_protocol.hpp"
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace {

using apgas::clock;
using apgas::task;
using namespace clock_model;

apgas::runtime* g_rt = nullptr;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int k_default_programs = 500;
#else
constexpr int k_default_programs = 2000;
#endif
int g_programs = k_default_programs;
std::uint64_t g_first_seed = 1;

// ---- what each place counts ----------------------------------------------------------------

/// Arrivals at this place per clock and phase (a process is one place; programs run one at a
/// time, and every place resets them before each).
std::array<std::array<std::atomic<std::int64_t>, k_max_phase + 2>, k_clocks> g_arrivals;

/// The phase the programs' clocks start in (set at every place before each program): the
/// model's phase k is the clock's phase g_first_phase + k - 1.
std::uint64_t g_first_phase = 1;
/// The model's number of the phase a registration is in.
std::uint64_t model_phase(const clock& r) { return r.phase() - g_first_phase + 1; }

void arrive(int c, std::uint64_t phase) {
  // relaxed: read after the phase's end, which every arrival happens before (the clock's
  // own synchronisation orders them).
  if (phase < g_arrivals[0].size())
    g_arrivals[static_cast<std::size_t>(c)][phase].fetch_add(1, std::memory_order_relaxed);
}
std::int64_t arrivals(int c, std::uint64_t phase) {
  return g_arrivals[static_cast<std::size_t>(c)][phase].load(std::memory_order_relaxed);
}

struct reset_arrivals {
  void operator()(std::uint64_t first_phase) const {
    g_first_phase = first_phase;
    for (auto& per_clock : g_arrivals)
      for (auto& n : per_clock) n.store(0, std::memory_order_relaxed);
  }
};

/// The traces of one run, at place 0.
struct run_state {
  std::mutex mutex;
  std::vector<std::optional<std::vector<std::int64_t>>> traces;
};

struct store_trace {
  void operator()(apgas::global_ref<run_state> out, std::uint32_t script,
                  std::vector<std::int64_t> trace) const {
    run_state& st = *out;
    const std::lock_guard guard(st.mutex);
    st.traces.at(script) = std::move(trace);
  }
};

// ---- the interpreter ----------------------------------------------------------------------

using registrations = std::array<clock, k_clocks>;
using scripts_t = std::vector<std::vector<op>>;

struct shared_program {
  int clocks;
  std::shared_ptr<const scripts_t> scripts;
};

task<> run_script(shared_program prog, std::uint32_t index, registrations& regs,
                  apgas::global_ref<run_state> out);

/// The clocks of `mask`, in order.
std::vector<int> clocks_of(std::uint8_t mask, int clocks) {
  std::vector<int> v;
  for (int c = 0; c < clocks; ++c)
    if (((mask >> c) & 1U) != 0) v.push_back(c);
  return v;
}

/// The registrations a child got, placed at their clocks' indices.
template <class... Clocks>
registrations place_regs(std::uint8_t mask, int clocks, Clocks... got) {
  registrations regs;
  std::array<clock*, sizeof...(Clocks)> in{&got...};
  std::size_t next = 0;
  for (int c : clocks_of(mask, clocks)) regs[static_cast<std::size_t>(c)] = std::move(*in[next++]);
  return regs;
}

/// A child: its registrations (moved into its frame), then its script. (Every child starts
/// in a plain coroutine function taking everything by value: a lambda coroutine would read its
/// captures from a closure that the spawn does not keep.)
task<> run_child(shared_program prog, std::uint32_t index, registrations regs,
                 apgas::global_ref<run_state> out) {
  co_await run_script(prog, index, regs, out);
}

/// The body of a child started here: takes its registrations, one per clock of its mask.
struct local_child {
  shared_program prog;
  std::uint32_t index;
  std::uint8_t mask;
  apgas::global_ref<run_state> out;
  template <class... Clocks>
  task<> operator()(Clocks... got) const {
    return run_child(prog, index, place_regs(mask, prog.clocks, std::move(got)...), out);
  }
};

/// The function of a child started by async_at: registrations first, then the program.
template <std::size_t N>
struct remote_child;
template <>
struct remote_child<0> {
  task<> operator()(int clocks, scripts_t s, std::uint32_t i, std::uint8_t m,
                    apgas::global_ref<run_state> out) const {
    return run_child({clocks, std::make_shared<const scripts_t>(std::move(s))}, i,
                     place_regs(m, clocks), out);
  }
};
template <>
struct remote_child<1> {
  task<> operator()(clock a, int clocks, scripts_t s, std::uint32_t i, std::uint8_t m,
                    apgas::global_ref<run_state> out) const {
    return run_child({clocks, std::make_shared<const scripts_t>(std::move(s))}, i,
                     place_regs(m, clocks, std::move(a)), out);
  }
};
template <>
struct remote_child<2> {
  task<> operator()(clock a, clock b, int clocks, scripts_t s, std::uint32_t i, std::uint8_t m,
                    apgas::global_ref<run_state> out) const {
    return run_child({clocks, std::make_shared<const scripts_t>(std::move(s))}, i,
                     place_regs(m, clocks, std::move(a), std::move(b)), out);
  }
};
template <>
struct remote_child<3> {
  task<> operator()(clock a, clock b, clock c, int clocks, scripts_t s, std::uint32_t i,
                    std::uint8_t m, apgas::global_ref<run_state> out) const {
    return run_child({clocks, std::make_shared<const scripts_t>(std::move(s))}, i,
                     place_regs(m, clocks, std::move(a), std::move(b), std::move(c)), out);
  }
};

/// Starts script `o.child` registered on the clocks `which` (those of `o.mask`), here or at
/// `o.place`.
template <std::size_t... I>
task<> spawn_with(registrations& regs, std::array<int, sizeof...(I)> which, op o,
                  shared_program prog, apgas::global_ref<run_state> out,
                  std::index_sequence<I...>) {
  constexpr std::size_t n = sizeof...(I);
  if (o.remote != 0) {
    if constexpr (n == 0)
      co_await apgas::async_at(o.place, remote_child<0>{}, prog.clocks, *prog.scripts, o.child,
                               o.mask, out);
    else
      co_await apgas::async_at(o.place, apgas::clocked(regs[static_cast<std::size_t>(which[I])]...),
                               remote_child<n>{}, prog.clocks, *prog.scripts, o.child, o.mask, out);
  } else {
    const local_child body{prog, o.child, o.mask, out};
    if constexpr (n == 0) co_await apgas::async(body());
    else co_await apgas::async(apgas::clocked(regs[static_cast<std::size_t>(which[I])]...), body);
  }
}

task<> spawn(registrations& regs, op o, shared_program prog, apgas::global_ref<run_state> out) {
  const std::vector<int> which = clocks_of(o.mask, prog.clocks);
  switch (which.size()) {
  case 0:
    co_await spawn_with<>(regs, {}, o, prog, out, std::index_sequence<>{});
    break;
  case 1:
    co_await spawn_with(regs, {which[0]}, o, prog, out, std::make_index_sequence<1>{});
    break;
  case 2:
    co_await spawn_with(regs, {which[0], which[1]}, o, prog, out, std::make_index_sequence<2>{});
    break;
  default:
    co_await spawn_with(regs, {which[0], which[1], which[2]}, o, prog, out,
                        std::make_index_sequence<3>{});
    break;
  }
}

/// advance_all over the registered clocks (a variadic call, so one per set of clocks).
task<> advance_all_of(registrations& regs, int clocks) {
  std::vector<int> held;
  for (int c = 0; c < clocks; ++c)
    if (regs[static_cast<std::size_t>(c)].registered()) held.push_back(c);
  auto at = [&](std::size_t i) -> clock& { return regs[static_cast<std::size_t>(held[i])]; };
  switch (held.size()) {
  case 0:
    break;
  case 1:
    co_await apgas::advance_all(at(0));
    break;
  case 2:
    co_await apgas::advance_all(at(0), at(1));
    break;
  default:
    co_await apgas::advance_all(at(0), at(1), at(2));
    break;
  }
}

/// advance with the phase's reduction.
task<std::int64_t> advance_reducing(clock& c, int index, std::int64_t value, apgas::signal s) {
  switch (reduction_of(index, model_phase(c))) {
  case reduce_op::sum:
    co_return co_await c.advance(apgas::sum, value, s);
  case reduce_op::min:
    co_return co_await c.advance(apgas::min, value, s);
  case reduce_op::max:
    co_return co_await c.advance(apgas::max, value, s);
  }
  co_return 0;
}

void record_state(std::vector<std::int64_t>& trace, const registrations& regs, int clocks) {
  for (int c = 0; c < clocks; ++c) {
    const clock& r = regs[static_cast<std::size_t>(c)];
    trace.push_back(r.registered()
                        ? static_cast<std::int64_t>(model_phase(r) * 2 + (r.resumed() ? 1 : 0))
                        : -1);
  }
}

/// Counts an arrival if `r` is about to end its part of its phase (it has not resumed).
void arrive_if_unresumed(const clock& r, int c) {
  if (r.registered() && !r.resumed()) arrive(c, model_phase(r));
}

task<> run_script(shared_program prog, std::uint32_t index, registrations& regs,
                  apgas::global_ref<run_state> out) {
  std::vector<std::int64_t> trace;
  for (const op& o : (*prog.scripts)[index]) {
    const auto c = static_cast<int>(o.clock);
    clock& r = regs[o.clock];
    const apgas::signal s = o.eager != 0 ? apgas::signal::eager : apgas::signal::lazy;
    try {
      switch (o.kind) {
      case op_kind::resume:
        arrive_if_unresumed(r, c);
        r.resume();
        trace.push_back(0);
        break;
      case op_kind::advance: {
        arrive_if_unresumed(r, c);
        const std::uint64_t ended = r.registered() ? model_phase(r) : 0;
        co_await r.advance(s);
        trace.push_back(arrivals(c, ended));
        break;
      }
      case op_kind::advance_reduce: {
        if (!r.resumed()) arrive_if_unresumed(r, c);
        const std::uint64_t ended = r.registered() ? model_phase(r) : 0;
        const std::int64_t v = co_await advance_reducing(r, c, o.value, s);
        trace.push_back(v);
        trace.push_back(arrivals(c, ended));
        break;
      }
      case op_kind::advance_all: {
        std::array<std::uint64_t, k_clocks> ended{};
        for (int k = 0; k < prog.clocks; ++k) {
          const clock& rk = regs[static_cast<std::size_t>(k)];
          arrive_if_unresumed(rk, k);
          if (rk.registered()) ended[static_cast<std::size_t>(k)] = model_phase(rk);
        }
        co_await advance_all_of(regs, prog.clocks);
        for (int k = 0; k < prog.clocks; ++k)
          if (regs[static_cast<std::size_t>(k)].registered())
            trace.push_back(arrivals(k, ended[static_cast<std::size_t>(k)]));
        break;
      }
      case op_kind::drop:
        arrive_if_unresumed(r, c);
        r.drop();
        trace.push_back(0);
        break;
      case op_kind::spawn:
        co_await spawn(regs, o, prog, out);
        trace.push_back(0);
        break;
      }
    } catch (const apgas::clock_use_exception&) {
      trace.push_back(k_error);
    }
    record_state(trace, regs, prog.clocks);
  }
  // The activity ends: its registrations drop (counted first, as the model counts them).
  for (int c = 0; c < prog.clocks; ++c) {
    clock& r = regs[static_cast<std::size_t>(c)];
    arrive_if_unresumed(r, c);
    if (r.registered()) r.drop();
  }
  if (apgas::here() == out.home()) store_trace{}(out, index, std::move(trace));
  else co_await apgas::async_at(out.home(), store_trace{}, out, index, std::move(trace));
}

// ---- running and comparing ------------------------------------------------------------------

using traces_t = std::vector<std::optional<std::vector<std::int64_t>>>;

/// The first phase of the clocks of the program of `seed`: mostly 1, as clock::make() has it;
/// else far from it (a resumed program's clock, clock::make(s, first_phase)).
std::uint64_t first_phase_of(std::uint64_t seed) {
  switch (seed % 7) {
  case 1:
    return 1'000'000'007;
  case 4:
    return std::uint64_t{1} << 63; // the largest first phase
  default:
    return 1;
  }
}

traces_t run_on_runtime(const program& p, apgas::signal default_signal, std::uint64_t first_phase) {
  return g_rt->run([&]() -> task<traces_t> {
    run_state st;
    st.traces.resize(p.scripts.size());
    co_await apgas::for_each_place(reset_arrivals{}, first_phase);
    const shared_program prog{p.clocks, std::make_shared<const scripts_t>(p.scripts)};
    co_await apgas::finish([&]() -> task<> {
      registrations regs;
      for (int c = 0; c < p.clocks; ++c)
        regs[static_cast<std::size_t>(c)] = co_await clock::make(default_signal, first_phase);
      co_await run_script(prog, 0, regs, apgas::global_ref<run_state>(st));
    });
    co_return std::move(st.traces);
  });
}

std::string show(const traces_t& t) {
  std::string s;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!t[i]) {
      s += fmt::format("  script {}: not started\n", i);
      continue;
    }
    s += fmt::format("  script {}: [{}]\n", i, fmt::join(*t[i], " "));
  }
  return s;
}

/// Ends the job with the program's seed and text if one program runs for too long (a hang).
class watchdog {
public:
  watchdog() : m_thread([this] { watch(); }) {}
  ~watchdog() {
    {
      const std::lock_guard guard(m_mutex);
      m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
  }
  void start(std::uint64_t seed, const program& p) {
    const std::lock_guard guard(m_mutex);
    m_seed = seed;
    m_text = describe(p);
    m_since = std::chrono::steady_clock::now();
    m_running = true;
  }
  void stop() {
    const std::lock_guard guard(m_mutex);
    m_running = false;
  }

private:
  void watch() {
    std::unique_lock lock(m_mutex);
    while (!m_stop) {
      m_wake.wait_for(lock, std::chrono::seconds(1));
      if (m_running && std::chrono::steady_clock::now() - m_since > std::chrono::seconds(60)) {
        std::fprintf(stderr,
                     "clock_differential_test: program of seed %llu runs for over a minute (a "
                     "hang):\n%s\nplace 0's state:\n%s\n",
                     static_cast<unsigned long long>(m_seed), m_text.c_str(),
                     apgas::detail::message_dispatcher::current().describe_state().c_str());
        std::fflush(stderr);
        std::abort();
      }
    }
  }
  std::mutex m_mutex;
  std::condition_variable m_wake;
  bool m_stop = false;
  bool m_running = false;
  std::uint64_t m_seed = 0;
  std::string m_text;
  std::chrono::steady_clock::time_point m_since;
  std::thread m_thread;
};

/// The runtime's traces differ from the model's for `p`.
bool fails(const program& p, apgas::signal s, std::uint64_t first_phase) {
  return run_on_runtime(p, s, first_phase) != model::run(p, 0).traces;
}

program shrink(program p, apgas::signal s, std::uint64_t first_phase) {
  for (bool smaller = true; smaller;) {
    smaller = false;
    for (program& q : shrink_candidates(p)) {
      if (model::run(q, 0).deadlock || !fails(q, s, first_phase)) continue;
      p = std::move(q);
      smaller = true;
      break;
    }
  }
  return p;
}

/// Programs for the runtime's number of places; the seeds differ per entry (places, workers),
/// so that the suite's entries test different programs. Every place makes the same programs
/// and gets every run's traces (runtime::run returns them everywhere), so all places compare,
/// and shrink, in step (each run is collective).
TEST(clock_differential, random_programs_agree_with_the_model) {
  const apgas::place_id places = g_rt->places();
  shape sh;
  sh.places = places;
  const std::uint64_t base =
      g_first_seed + 1'000'000ULL * places + 100'000'000ULL * g_rt->threads();
  const bool report = g_rt->here() == 0;
  if (report)
    std::printf("clock_differential_test: %d programs from seed %llu at %u place(s)\n", g_programs,
                static_cast<unsigned long long>(base), places);
  std::optional<watchdog> dog;
  if (report) dog.emplace();
  // What the programs did (from the model), to show the test exercises what it claims to.
  std::uint64_t activities = 0, remote = 0, operations = 0, advances = 0, errors = 0;
  for (int i = 0; i < g_programs; ++i) {
    const std::uint64_t seed = base + static_cast<std::uint64_t>(i);
    const program p = generate(seed, sh);
    const apgas::signal s = seed % 3 == 0 ? apgas::signal::eager : apgas::signal::lazy;
    const std::uint64_t first_phase = first_phase_of(seed);
    if (dog) dog->start(seed, p);
    const traces_t got = run_on_runtime(p, s, first_phase);
    const outcome expect = model::run(p, 0);
    const auto where = places_of(p);
    for (std::size_t k = 0; k < p.scripts.size(); ++k) {
      if (!expect.traces[k]) continue;
      ++activities;
      remote += where[k] != 0 ? 1 : 0;
      operations += p.scripts[k].size();
      for (const op& o : p.scripts[k])
        advances += o.kind == op_kind::advance || o.kind == op_kind::advance_reduce ||
                            o.kind == op_kind::advance_all
                        ? 1
                        : 0;
      errors += static_cast<std::uint64_t>(
          std::count(expect.traces[k]->begin(), expect.traces[k]->end(), k_error));
    }
    if (got == expect.traces) {
      if (dog) dog->stop();
      continue;
    }
    if (report)
      ADD_FAILURE() << "seed " << seed << " (" << (s == apgas::signal::eager ? "eager" : "lazy")
                    << ", clocks from phase " << first_phase
                    << "): the runtime's traces differ from the model's\n"
                    << describe(p) << "model:\n"
                    << show(expect.traces) << "runtime:\n"
                    << show(got);
    const program small = shrink(p, s, first_phase);
    if (dog) dog->stop();
    if (report) {
      const traces_t small_got = run_on_runtime(small, s, first_phase);
      ADD_FAILURE() << "seed " << seed << ", shrunk to:\n"
                    << describe(small) << "model:\n"
                    << show(model::run(small, 0).traces) << "runtime:\n"
                    << show(small_got);
    } else {
      (void)run_on_runtime(small, s, first_phase); // place 0 runs it once more to show it
    }
    break;
  }
  // Phases that ended on the collective path at this place, and those that left it (every
  // clock is over by now: their proxies added their counts to the module's).
  const auto& counted = apgas::detail::clock_protocol::current().counters();
  const auto collective = counted.phases_collective.load(std::memory_order_relaxed);
  const auto fallbacks = counted.collective_fallbacks.load(std::memory_order_relaxed);
  if (report) {
    std::printf("clock_differential_test: %llu activities (%llu away from place 0), %llu "
                "operations (%llu advances, %llu misuses refused)\n",
                static_cast<unsigned long long>(activities),
                static_cast<unsigned long long>(remote),
                static_cast<unsigned long long>(operations),
                static_cast<unsigned long long>(advances), static_cast<unsigned long long>(errors));
    std::printf("clock_differential_test: at place 0, %llu phases ended on the collective path, "
                "%llu phases left it\n",
                static_cast<unsigned long long>(collective),
                static_cast<unsigned long long>(fallbacks));
    // Across places the runs of stable phases take the collective path, and changes in them
    // leave it: the test covers both.
    if (places > 1) {
      EXPECT_GT(collective, 0U);
      EXPECT_GT(fallbacks, 0U);
    }
  }
}

} // namespace

int main(int argc, char** argv) {
  // Our own flags first (the runtime refuses flags it does not know).
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--long") g_programs = 20000;
    else if (a == "--programs" && i + 1 < argc) g_programs = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) g_first_seed = std::strtoull(argv[++i], nullptr, 10);
    else argv[kept++] = argv[i];
  }
  argc = kept;
  argv[argc] = nullptr;
  return apgas_test::run_places_tests(argc, argv, g_rt);
}
