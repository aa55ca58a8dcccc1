// bench_clocks: the cost of a clock phase, against its peers in the same run.
//
//   launch/apgasrun -n P bench_clocks [--phases N] [--rounds R] [--target 1.2]
//                                     [--activities 2,8,64,1024] [--local-phases N]
//
// Across places (P >= 2): one activity per place advances a clock N times, against
// MPI_Barrier; and advance(apgas::sum, x) against MPI_Allreduce of one long. Lazy and eager
// waits both. The MPI peers run before each round's runtime exists (see common.hpp), rounds
// take turns (the machine's speed drifts). Target: a phase costs at most --target times the
// MPI call.
//
// At one place (P = 1): k clocked activities advance together (k from --activities), against
// the clock the uClocks paper starts from (one global mutex and condition variable, a thread
// per activity) and, where k is the number of workers, against std::barrier with k threads;
// then lazy against eager waits on balanced and unbalanced phases; then a clocked loop beside a
// stream of atomic blocks, against a clock built on atomic and when (X10's design before
// uClocks: every clock operation takes the place's atomic lock).
#include <apgas/clock.hpp>

#include "../atomic_stream.hpp"
#include "common.hpp"

#include <barrier>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <thread>

namespace {

using namespace apgas_bench;
using apgas::task;

std::vector<long> parse_list(const std::string& text) {
  std::vector<long> v;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) v.push_back(std::stol(item));
  return v;
}

// ---- across places ---------------------------------------------------------------------------

/// Seconds per MPI_Barrier (or MPI_Allreduce when `reduce`), over `n` calls after a warm-up.
double mpi_phase(int n, bool reduce) {
  long in = world_rank();
  long out = 0;
  const auto call = [&] {
    if (reduce) MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    else MPI_Barrier(MPI_COMM_WORLD);
  };
  for (int i = 0; i < n / 10 + 10; ++i) call();
  MPI_Barrier(MPI_COMM_WORLD);
  const auto t0 = clock::now();
  for (int i = 0; i < n; ++i) call();
  const double dt = seconds_since(t0);
  if (reduce && out != static_cast<long>(world_size()) * (world_size() - 1) / 2)
    fail("MPI_Allreduce gave a wrong sum");
  return dt / n;
}

std::atomic<double> g_seconds_per_phase{0};

/// Seconds per clock phase with one activity per place (place 0's view), `n` phases after a
/// warm-up; with a sum of the place ids when `reduce` (checked every phase).
double clock_phase(apgas::runtime& rt, int n, bool reduce, apgas::signal s) {
  return rt.run([n, reduce, s]() -> task<double> {
    co_await apgas::finish([&]() -> task<> {
      apgas::clock c = co_await apgas::clock::make(s);
      for (apgas::place_id p = 0; p < apgas::places(); ++p)
        co_await apgas::async_at(
            p, apgas::clocked(c),
            [](apgas::clock mine, int phases, bool with_sum) -> task<> {
              const long me = apgas::here();
              const long expect = static_cast<long>(apgas::places()) * (apgas::places() - 1) / 2;
              const int warmup = phases / 10 + 10;
              auto t0 = std::chrono::steady_clock::now();
              for (int i = -warmup; i < phases; ++i) {
                if (i == 0) t0 = std::chrono::steady_clock::now();
                if (!with_sum) {
                  co_await mine.advance();
                } else if (co_await mine.advance(apgas::sum, me) != expect) {
                  throw std::runtime_error("a clock reduction gave a wrong sum");
                }
              }
              if (me == 0) g_seconds_per_phase = seconds_since(t0) / phases;
            },
            n, reduce);
      c.drop();
    });
    co_return g_seconds_per_phase.load();
  });
}

void across_places(const apgas::options& opts, int level, int phases, int rounds, double target,
                   double watchdog_s) {
  struct row {
    const char* what;
    bool reduce;
    std::vector<double> mpi, lazy, eager;
  };
  row rows[] = {{"advance vs MPI_Barrier", false, {}, {}, {}},
                {"advance(sum) vs MPI_Allreduce", true, {}, {}, {}}};
  std::string description;
  apgas::place_id here = 0;
  for (int round = 0; round < rounds; ++round) {
    for (row& r : rows) r.mpi.push_back(mpi_phase(phases, r.reduce));
    apgas::runtime rt(opts);
    watchdog dog(rt, watchdog_s);
    here = rt.here();
    description = describe(rt, level);
    for (row& r : rows) {
      watchdog::phase() = r.what;
      r.lazy.push_back(clock_phase(rt, phases, r.reduce, apgas::signal::lazy));
      r.eager.push_back(clock_phase(rt, phases, r.reduce, apgas::signal::eager));
    }
  }
  if (here != 0) return;
  fmt::print("bench_clocks: a clock phase with one activity per place, against MPI\n");
  fmt::print("  {}\n  {} phases in each of {} rounds (median over rounds)\n\n", description, phases,
             rounds);
  fmt::print("| operation | MPI us | clock lazy us | clock eager us | ratio (best wait) | "
             "target |\n|---|---:|---:|---:|---:|---|\n");
  for (row& r : rows) {
    const double mpi = summarize(r.mpi).median * 1e6;
    const double lazy = summarize(r.lazy).median * 1e6;
    const double eager = summarize(r.eager).median * 1e6;
    const double ratio = std::min(lazy, eager) / mpi;
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} (<= {:.1f}) |\n", r.what, mpi, lazy,
               eager, ratio, ratio <= target ? "pass" : "MISS", target);
  }
}

// ---- one place -------------------------------------------------------------------------------

/// The uClocks paper's baseline: a clock as one mutex and condition variable, a thread per
/// activity, every waiter woken on every phase.
class mutex_clock {
public:
  explicit mutex_clock(long registered) : m_registered(registered) {}
  void advance() {
    std::unique_lock lock(m_mutex);
    const long phase = m_phase;
    if (++m_resumed == m_registered) {
      m_resumed = 0;
      ++m_phase;
      m_cv.notify_all();
      return;
    }
    m_cv.wait(lock, [&] { return m_phase != phase; });
  }

private:
  std::mutex m_mutex;
  std::condition_variable m_cv;
  long m_registered;
  long m_resumed = 0;
  long m_phase = 0;
};

/// Seconds per phase of k threads using `barrier_of` (a mutex_clock or a std::barrier).
template <class Barrier>
double threads_phase(long k, int phases, Barrier& b) {
  std::vector<std::thread> threads;
  std::atomic<long> ready{0};
  const auto t0 = clock::now();
  for (long t = 0; t < k; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < phases; ++i) {
        if constexpr (std::is_same_v<Barrier, mutex_clock>) b.advance();
        else b.arrive_and_wait();
      }
      ready.fetch_add(1);
    });
  for (auto& t : threads) t.join();
  return seconds_since(t0) / phases;
}

/// Seconds per phase of k clocked activities at this place, each doing `work(i)` iterations of
/// a busy loop per phase.
template <class Work>
double local_clock_phase(apgas::runtime& rt, long k, int phases, apgas::signal s, Work work) {
  return rt.run([k, phases, s, work]() -> task<double> {
    const auto t0 = clock::now();
    co_await apgas::finish([&]() -> task<> {
      apgas::clock c = co_await apgas::clock::make(s);
      for (long i = 0; i < k; ++i)
        co_await apgas::async(apgas::clocked(c), [i, phases, work](apgas::clock mine) -> task<> {
          const long iterations = work(i);
          for (int p = 0; p < phases; ++p) {
            volatile long sink = 0;
            for (long j = 0; j < iterations; ++j) sink = sink + j;
            co_await mine.advance();
          }
        });
      c.drop();
    });
    co_return seconds_since(t0) / phases;
  });
}

/// X10's clock before uClocks, on apgas's atomic and when: resume and the phase test take the
/// place's one atomic lock, as every user atomic block does.
struct atomic_lock_clock {
  long registered;
  long resumed = 0;
  long phase = 0;
  apgas::task<> advance() {
    long mine = 0;
    co_await apgas::atomic([&] {
      mine = phase;
      if (++resumed == registered) {
        resumed = 0;
        ++phase;
      }
    });
    co_await apgas::when([&] { return phase != mine; }, [] {});
  }
};

/// Seconds per phase of k activities advancing `phases` times, on an apgas clock or (`on_lock`)
/// an atomic_lock_clock, with (`stream`) or without a stream of atomic blocks beside them.
double clock_beside_atomics(apgas::runtime& rt, long k, int phases, bool on_lock, bool stream) {
  return rt.run([=]() -> task<double> {
    std::atomic<bool> stop{false};
    apgas_bench::atomic_counter counter;
    double seconds = 0;
    co_await apgas::finish([&]() -> task<> {
      if (stream) co_await apgas::async(apgas_bench::atomic_stream_until(stop, counter, 200));
      const auto t0 = clock::now();
      co_await apgas::finish([&]() -> task<> {
        if (on_lock) {
          atomic_lock_clock lc{k};
          for (long i = 0; i < k; ++i)
            co_await apgas::async([&lc, phases]() -> task<> {
              for (int p = 0; p < phases; ++p) co_await lc.advance();
            });
          co_return;
        }
        apgas::clock c = co_await apgas::clock::make();
        for (long i = 0; i < k; ++i)
          co_await apgas::async(apgas::clocked(c), [phases](apgas::clock mine) -> task<> {
            for (int p = 0; p < phases; ++p) co_await mine.advance();
          });
      });
      seconds = seconds_since(t0) / phases;
      stop = true; // relaxed inside: the stream stops at some point
    });
    co_return seconds;
  });
}

void at_one_place(const apgas::options& opts, const std::vector<long>& activities, int phases) {
  apgas::runtime rt(opts);
  const long workers = rt.threads();
  fmt::print("bench_clocks: k clocked activities at one place ({} workers), a phase each\n",
             workers);
  fmt::print("  peers: one mutex + condition variable with a thread per activity (the uClocks "
             "paper's baseline), std::barrier with k threads\n\n");
  fmt::print("| k | clock lazy us | clock eager us | mutex+cv threads us | ratio mutex/clock | "
             "std::barrier us | ratio barrier/clock |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  const auto none = [](long) { return 0L; };
  for (const long k : activities) {
    const int n = static_cast<int>(std::max<long>(20, phases / std::max(1L, k / 8)));
    const double lazy = local_clock_phase(rt, k, n, apgas::signal::lazy, none) * 1e6;
    const double eager = local_clock_phase(rt, k, n, apgas::signal::eager, none) * 1e6;
    mutex_clock mc(k);
    const double mutex_us = threads_phase(k, n, mc) * 1e6;
    const double best = std::min(lazy, eager);
    std::string barrier_cells = "- | -";
    if (k == workers) {
      std::barrier b(k);
      const double barrier_us = threads_phase(k, n, b) * 1e6;
      barrier_cells = fmt::format("{:.2f} | {:.2f}", barrier_us, barrier_us / best);
    }
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} |\n", k, lazy, eager, mutex_us,
               mutex_us / best, barrier_cells);
  }
  fmt::print("\nLazy against eager: k activities, balanced phases (every activity the same "
             "work) and unbalanced ones (activity 0 does 20 times the work)\n\n");
  fmt::print("| k | work | balanced lazy us | balanced eager us | unbalanced lazy us | "
             "unbalanced eager us |\n|---:|---:|---:|---:|---:|---:|\n");
  for (const long k : {workers, 8 * workers}) {
    for (const long w : {100L, 10'000L}) {
      const int n = static_cast<int>(std::max<long>(20, phases / (w / 100 + k / 8)));
      const auto balanced = [w](long) { return w; };
      const auto unbalanced = [w](long i) { return i == 0 ? 20 * w : w; };
      fmt::print("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", k, w,
                 local_clock_phase(rt, k, n, apgas::signal::lazy, balanced) * 1e6,
                 local_clock_phase(rt, k, n, apgas::signal::eager, balanced) * 1e6,
                 local_clock_phase(rt, k, n, apgas::signal::lazy, unbalanced) * 1e6,
                 local_clock_phase(rt, k, n, apgas::signal::eager, unbalanced) * 1e6);
    }
  }
  fmt::print("\nA clocked loop beside a stream of atomic blocks (one activity runs atomic blocks "
             "of 200 multiply-adds without pause): a clock never takes the atomic lock, a clock "
             "built on atomic and when does\n\n");
  fmt::print("| k | clock alone us | clock beside atomics us | slowdown | atomic-lock clock alone "
             "us | beside atomics us | slowdown |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const long k : {workers, 8 * workers}) {
    const int n = std::max(20, phases / 4);
    const double alone = clock_beside_atomics(rt, k, n, false, false) * 1e6;
    const double beside = clock_beside_atomics(rt, k, n, false, true) * 1e6;
    const double lock_alone = clock_beside_atomics(rt, k, n, true, false) * 1e6;
    const double lock_beside = clock_beside_atomics(rt, k, n, true, true) * 1e6;
    fmt::print("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {:.2f} |\n", k, alone, beside,
               beside / alone, lock_alone, lock_beside, lock_beside / lock_alone);
  }
}

} // namespace

int main(int argc, char** argv) {
  const apgas::options opts = runtime_options(argc, argv);
  flags f(argc, argv);
  const int phases = f.get("--phases", 20000);
  const int rounds = f.get("--rounds", 5);
  const double target = f.get("--target", 1.2);
  const double watchdog_s = f.get("--watchdog-s", 300.0);
  const auto activities = parse_list(f.get<std::string>("--activities", "2,8,64,256,1024"));
  const int local_phases = f.get("--local-phases", 2000);
  f.done();
  if (phases < 1 || rounds < 1 || local_phases < 1) {
    std::fprintf(stderr, "--phases, --rounds and --local-phases must be at least 1\n");
    return 2;
  }
  const int level = init_mpi(argc, argv);
  if (world_size() >= 2) across_places(opts, level, phases, rounds, target, watchdog_s);
  else at_one_place(opts, activities, local_phases);
  return 0;
}
