// bench_micro: the costs of the apgas primitives, with TBB task_group for comparison.
//
//   spawn_join     a finish with K asyncs of empty tasks (K = 1..1024), both policies,
//                  1 and 2 workers; items_per_second and per_task count the asyncs
//   empty_finish   co_await finish(policy, empty body)
//   finish_all     co_await finish_all(empty_task(), empty_task()): the fork-join the kernels
//                  use (one of the two tasks is stealable: one spawn); its policy is the
//                  runtime's default, so this one rebuilds the runtime per policy
//   call_empty     co_await empty_task(): a sequential call of an empty coroutine (baseline:
//                  the frame allocation and the two symmetric transfers every task pays)
//   steal_latency  time from making one task stealable to its start on the other worker
//                  (2 workers; see the comment above BM_apgas_steal_latency)
//   tbb_*          the same with tbb::task_group (a task_group plays the finish)
// At the end, a ratio per benchmark that has its peer in the run (apgas over TBB, the proxy
// count over the flat list), from the best repetition when --benchmark_repetitions is given.
//
//   proxy_send     a distributed finish's count of one remote async sent from a place that
//                  is not its home (proxy_tally::on_send), to random places among P; its peer
//                  flat_list_send is the flat list it replaced (a scan per send, O(P))
//
// How apgas is timed: the benchmark loop itself runs inside the root activity of a runtime
// (`rt.run([&]() -> task<> { for (auto _ : state) ... })`), so an iteration costs what the
// primitive costs inside a running program, not the inject/wake-up of runtime::run. The loop
// may move between workers (a work-first continuation can resume elsewhere), so apgas
// benchmarks use wall-clock time (UseRealTime) and process CPU time.
//
// Only one apgas runtime may exist at a time: runtime_for(n) keeps one, with n workers,
// and replaces it when a benchmark needs another count; TBB benchmarks drop it first so that
// its idle workers do not compete. Benchmarks are registered grouped by worker count.
#include <apgas/apgas.hpp>
#include <apgas/detail/finish_tally.hpp>

#include <benchmark/benchmark.h>

#ifdef APGAS_BENCH_HAVE_TBB
#include <tbb/global_control.h>
#include <tbb/task_group.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iomanip>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

std::unique_ptr<apgas::runtime> g_runtime;

apgas::runtime& runtime_for(unsigned threads,
                            apgas::policy default_policy = apgas::policy::work_first) {
  if (!g_runtime || g_runtime->threads() != threads ||
      g_runtime->opts().default_policy != default_policy) {
    g_runtime.reset(); // the old one must be gone before the new one is created
    g_runtime = std::make_unique<apgas::runtime>(
        apgas::options{.threads = threads, .default_policy = default_policy});
  }
  return *g_runtime;
}

void drop_runtime() { g_runtime.reset(); }

apgas::policy policy_arg(std::int64_t v) {
  return v == 0 ? apgas::policy::work_first : apgas::policy::help_first;
}

void set_policy_label(benchmark::State& state, std::int64_t v) {
  state.SetLabel(v == 0 ? "work-first" : "help-first");
}

/// Counters that say "per async": items_per_second, and per_task (seconds per task, inverted).
void set_per_task(benchmark::State& state, std::int64_t tasks_per_iteration) {
  state.SetItemsProcessed(state.iterations() * tasks_per_iteration);
  state.counters["per_task"] = benchmark::Counter(static_cast<double>(tasks_per_iteration),
                                                  benchmark::Counter::kIsIterationInvariantRate |
                                                      benchmark::Counter::kInvert);
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/// Spins until `slot` is set; false after `limit_ns` (the other worker never took the task).
bool spin_until_set(const std::atomic<std::int64_t>& slot, std::int64_t limit_ns) {
  const std::int64_t give_up = now_ns() + limit_ns;
  for (unsigned i = 0; slot.load(std::memory_order_acquire) == 0; ++i) {
    cpu_relax();
    if ((i & 1023U) == 0 && now_ns() > give_up) return false;
  }
  return true;
}

constexpr std::int64_t k_steal_give_up_ns = 2'000'000'000;
constexpr auto k_cold_pause = std::chrono::milliseconds(2);

[[gnu::noinline]] apgas::task<> empty_task() { co_return; }

// ---- apgas ---------------------------------------------------------------------------------

// args: policy (0 work-first, 1 help-first), K asyncs per finish, workers
void BM_apgas_spawn_join(benchmark::State& state) {
  const apgas::policy p = policy_arg(state.range(0));
  const std::int64_t k = state.range(1);
  auto& rt = runtime_for(static_cast<unsigned>(state.range(2)));
  rt.run([&]() -> apgas::task<> {
    for (auto _ : state) {
      co_await apgas::finish(p, [k]() -> apgas::task<> {
        for (std::int64_t i = 0; i < k; ++i) co_await apgas::async(empty_task());
      });
    }
  });
  set_policy_label(state, state.range(0));
  set_per_task(state, k);
}

// args: policy, workers
void BM_apgas_empty_finish(benchmark::State& state) {
  const apgas::policy p = policy_arg(state.range(0));
  auto& rt = runtime_for(static_cast<unsigned>(state.range(1)));
  rt.run([&]() -> apgas::task<> {
    for (auto _ : state) co_await apgas::finish(p, []() -> apgas::task<> { co_return; });
  });
  set_policy_label(state, state.range(0));
}

// args: policy (the runtime's default policy), workers
void BM_apgas_finish_all(benchmark::State& state) {
  auto& rt = runtime_for(static_cast<unsigned>(state.range(1)), policy_arg(state.range(0)));
  rt.run([&]() -> apgas::task<> {
    for (auto _ : state) co_await apgas::finish_all(empty_task(), empty_task());
  });
  set_policy_label(state, state.range(0));
  set_per_task(state, 1);
}

// args: workers
void BM_apgas_call_empty(benchmark::State& state) {
  auto& rt = runtime_for(static_cast<unsigned>(state.range(0)));
  rt.run([&]() -> apgas::task<> {
    for (auto _ : state) co_await empty_task();
  });
  set_per_task(state, 1);
}

apgas::task<> stamp(std::atomic<std::int64_t>* slot) {
  slot->store(now_ns(), std::memory_order_release);
  co_return;
}

apgas::task<> wait_for_stamp(std::atomic<std::int64_t>* slot, bool* gave_up) {
  *gave_up = !spin_until_set(*slot, k_steal_give_up_ns);
  co_return;
}

// Steal latency, 2 workers. One iteration: the worker running the benchmark loop (A) reads the
// clock (t0) and makes exactly one item stealable, then keeps its own thread busy so that only
// the other worker (B) can take it; the item records the clock when it starts running on B
// (t1). The iteration time is t1 - t0 (manual time), i.e. push + B noticing + the steal + the
// resume. B cannot take it any sooner than a real idle worker would, and A cannot take it
// itself, so nothing is hidden and nothing is added except one clock read on each side (the
// two clocks are the same CLOCK_MONOTONIC).
//   args[0] = 0, help-first: the child is pushed; A spins in the parent until the child has
//     started on B (child stealing).
//   args[0] = 1, work-first: the parent's continuation is pushed and A runs the child, which
//     spins until the continuation has started on B (continuation stealing).
//   args[1] = 0, hot: iterations back to back; B is still in its spin/steal loop.
//     args[1] = 1, cold: A first sleeps 2 ms (untimed), long enough for B to park, so the time
//     includes waking a parked worker (futex) as well.
// Which worker plays A changes when the finish is completed on B; that is symmetric.
void BM_apgas_steal_latency(benchmark::State& state) {
  const bool work_first = state.range(0) == 1;
  const bool cold = state.range(1) == 1;
  auto& rt = runtime_for(2);
  bool gave_up = false;
  rt.run([&]() -> apgas::task<> {
    for (auto _ : state) {
      if (cold) std::this_thread::sleep_for(k_cold_pause);
      std::atomic<std::int64_t> started{0};
      std::int64_t t0 = 0;
      if (work_first) {
        co_await apgas::finish(apgas::policy::work_first, [&]() -> apgas::task<> {
          t0 = now_ns();
          co_await apgas::async(wait_for_stamp(&started, &gave_up));
          // The continuation: here on B if it was stolen (or on A after the give-up).
          if (started.load(std::memory_order_relaxed) == 0)
            started.store(now_ns(), std::memory_order_release);
        });
      } else {
        co_await apgas::finish(apgas::policy::help_first, [&]() -> apgas::task<> {
          t0 = now_ns();
          co_await apgas::async(stamp(&started));
          gave_up = !spin_until_set(started, k_steal_give_up_ns);
        });
      }
      if (gave_up) {
        state.SkipWithError("the other worker did not take the task within 2 s");
        break;
      }
      state.SetIterationTime(static_cast<double>(started.load() - t0) * 1e-9);
    }
  });
  state.SetLabel(std::string(work_first ? "work-first (continuation)" : "help-first (child)") +
                 (cold ? ", thief parked" : ", thief spinning"));
}

// ---- TBB -----------------------------------------------------------------------------------

#ifdef APGAS_BENCH_HAVE_TBB

// args: K tasks per task_group, threads
void BM_tbb_spawn_join(benchmark::State& state) {
  drop_runtime();
  const std::int64_t k = state.range(0);
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(state.range(1)));
  for (auto _ : state) {
    tbb::task_group g;
    for (std::int64_t i = 0; i < k; ++i) g.run([] {});
    g.wait();
  }
  set_per_task(state, k);
}

// args: threads
void BM_tbb_empty_group(benchmark::State& state) {
  drop_runtime();
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                            static_cast<std::size_t>(state.range(0)));
  for (auto _ : state) {
    tbb::task_group g;
    g.wait();
  }
}

// The TBB analogue of the help-first steal latency: the main thread (a TBB master) runs one
// task into its group and spins until a TBB worker has started it. args: cold (0 or 1).
void BM_tbb_steal_latency(benchmark::State& state) {
  drop_runtime();
  const bool cold = state.range(0) == 1;
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, 2);
  for (auto _ : state) {
    if (cold) std::this_thread::sleep_for(k_cold_pause);
    std::atomic<std::int64_t> started{0};
    tbb::task_group g;
    const std::int64_t t0 = now_ns();
    g.run([&started] { started.store(now_ns(), std::memory_order_release); });
    const bool ok = spin_until_set(started, k_steal_give_up_ns);
    g.wait();
    if (!ok) {
      state.SkipWithError("no TBB worker took the task within 2 s");
      break;
    }
    state.SetIterationTime(static_cast<double>(started.load() - t0) * 1e-9);
  }
  state.SetLabel(cold ? "child, thief parked" : "child, thief spinning");
}

#endif

/// With --benchmark_repetitions=N, also report the best repetition (`_min`): on a shared machine
/// the fastest repetition is the one least disturbed by other processes.
double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void spawn_join_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"policy", "tasks", "workers"});
  for (std::int64_t workers : {1, 2})
    for (std::int64_t policy : {0, 1})
      for (std::int64_t k = 1; k <= 1024; k *= 4) b->Args({policy, k, workers});
}

/// Random destinations among `places` (a xorshift: cheaper than the count it feeds).
struct random_places {
  std::uint64_t x = 0x9E3779B97F4A7C15ULL;
  std::uint32_t places;
  std::uint32_t next() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return static_cast<std::uint32_t>(x % places);
  }
};

void BM_proxy_send(benchmark::State& state) {
  apgas::detail::proxy_tally tally;
  random_places to{.places = static_cast<std::uint32_t>(state.range(0))};
  for (auto _ : state) tally.on_send(to.next());
  benchmark::DoNotOptimize(tally);
  state.SetItemsProcessed(state.iterations());
}

/// The peer: the proxy's count as it was (a flat list of (place, count), scanned per send),
/// under the same kind of lock.
void BM_flat_list_send(benchmark::State& state) {
  apgas::detail::spin_lock lock;
  std::vector<std::pair<std::uint32_t, std::uint64_t>> sent;
  random_places to{.places = static_cast<std::uint32_t>(state.range(0))};
  for (auto _ : state) {
    const std::uint32_t p = to.next();
    std::lock_guard guard(lock);
    bool found = false;
    for (auto& [q, n] : sent) {
      if (q == p) {
        ++n;
        found = true;
        break;
      }
    }
    if (!found) sent.emplace_back(p, 1);
  }
  benchmark::DoNotOptimize(sent);
  state.SetItemsProcessed(state.iterations());
}

} // namespace

BENCHMARK(BM_proxy_send)
    ->ArgName("places")
    ->RangeMultiplier(8)
    ->Range(2, 4096)
    ->ComputeStatistics("min", min_of);
BENCHMARK(BM_flat_list_send)
    ->ArgName("places")
    ->RangeMultiplier(8)
    ->Range(2, 4096)
    ->ComputeStatistics("min", min_of);

// Registered grouped by worker count, so that the runtime is rebuilt rarely.
BENCHMARK(BM_apgas_call_empty)
    ->ArgName("workers")
    ->Arg(1)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
BENCHMARK(BM_apgas_empty_finish)
    ->ArgNames({"policy", "workers"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 2})
    ->Args({1, 2})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
BENCHMARK(BM_apgas_finish_all)
    ->ArgNames({"policy", "workers"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 2})
    ->Args({1, 2})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
BENCHMARK(BM_apgas_spawn_join)
    ->Apply(spawn_join_args)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
// Cold runs sleep 2 ms per iteration (untimed): a fixed iteration count keeps them short.
constexpr benchmark::IterationCount k_cold_iterations = 400;

BENCHMARK(BM_apgas_steal_latency)
    ->ArgNames({"work_first", "cold"})
    ->Args({0, 0})
    ->Args({1, 0})
    ->UseManualTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
BENCHMARK(BM_apgas_steal_latency)
    ->ArgNames({"work_first", "cold"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Iterations(k_cold_iterations)
    ->UseManualTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
#ifdef APGAS_BENCH_HAVE_TBB
BENCHMARK(BM_tbb_empty_group)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
BENCHMARK(BM_tbb_spawn_join)
    ->ArgNames({"tasks", "threads"})
    ->ArgsProduct({benchmark::CreateRange(1, 1024, 4), {1, 2}})
    ->UseRealTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
BENCHMARK(BM_tbb_steal_latency)
    ->ArgName("cold")
    ->Arg(0)
    ->UseManualTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
BENCHMARK(BM_tbb_steal_latency)
    ->ArgName("cold")
    ->Arg(1)
    ->Iterations(k_cold_iterations)
    ->UseManualTime()
    ->MeasureProcessCPUTime()
    ->ComputeStatistics("min", min_of);
#endif

namespace {

/// A benchmark's name without the suffixes that say how it was timed:
/// "BM_x/a:1/iterations:400/process_time/real_time" gives "BM_x/a:1".
std::string plain_name(std::string name) {
  for (const char* suffix : {"/real_time", "/manual_time", "/process_time"})
    if (const auto at = name.find(suffix); at != std::string::npos)
      name.erase(at, std::strlen(suffix));
  if (const auto at = name.find("/iterations:"); at != std::string::npos) {
    const auto end = name.find('/', at + 1);
    name.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  return name;
}

/// The value of `arg` in a name like "BM_x/policy:0/tasks:4" ("" if absent).
std::string arg_of(const std::string& name, const std::string& arg) {
  const auto at = name.find("/" + arg + ":");
  if (at == std::string::npos) return "";
  const auto from = at + arg.size() + 2;
  return name.substr(from, name.find('/', from) - from);
}

/// The peer of an apgas benchmark in this file, or "" if it has none.
std::string peer_of(const std::string& name) {
  if (name.starts_with("BM_apgas_spawn_join/"))
    return "BM_tbb_spawn_join/tasks:" + arg_of(name, "tasks") +
           "/threads:" + arg_of(name, "workers");
  if (name.starts_with("BM_apgas_empty_finish/"))
    return "BM_tbb_empty_group/threads:" + arg_of(name, "workers");
  if (name.starts_with("BM_apgas_steal_latency/"))
    return "BM_tbb_steal_latency/cold:" + arg_of(name, "cold");
  if (name.starts_with("BM_proxy_send/"))
    return "BM_flat_list_send/places:" + arg_of(name, "places");
  return "";
}

/// The console output, then the ratio of every benchmark that has a peer in the run (its time
/// over the peer's; the best repetition's when repeated, as `_min` reports it).
class ratio_reporter final : public benchmark::ConsoleReporter {
public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      if (r.run_type == Run::RT_Aggregate) continue; // the repetitions themselves are here too
      const std::string name = plain_name(r.benchmark_name());
      // Seconds per iteration, the best repetition's.
      const double seconds =
          r.GetAdjustedRealTime() / benchmark::GetTimeUnitMultiplier(r.time_unit);
      const auto [it, first] = m_seconds.try_emplace(name, seconds);
      if (!first) it->second = std::min(it->second, seconds);
    }
  }
  void Finalize() override {
    bool header = false;
    for (const auto& [name, seconds] : m_seconds) {
      const std::string peer = peer_of(name);
      const auto it = m_seconds.find(peer);
      if (peer.empty() || it == m_seconds.end() || it->second <= 0) continue;
      if (!header) {
        GetOutputStream() << "\nratios (time per iteration over the peer's):\n";
        header = true;
      }
      GetOutputStream() << "  " << name << " / " << peer << " = " << std::fixed
                        << std::setprecision(3) << seconds / it->second << "\n";
    }
    ConsoleReporter::Finalize();
  }

private:
  std::map<std::string, double> m_seconds; ///< per plain name: seconds per iteration
};

} // namespace

int main(int argc, char** argv) {
  // Our reporter prints the console format; another format asked for is left to the library.
  bool console = true;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.starts_with("--benchmark_format=") && a != "--benchmark_format=console") console = false;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  ratio_reporter ratios;
  if (console) benchmark::RunSpecifiedBenchmarks(&ratios);
  else benchmark::RunSpecifiedBenchmarks();
  drop_runtime(); // workers joined before static destruction
  benchmark::Shutdown();
  return 0;
}
