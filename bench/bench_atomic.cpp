// bench_atomic: apgas's atomic blocks and `when` against their std::mutex peers, in one run.
//
//  1. Atomic blocks per second: one activity (uncontended) and one activity per worker
//     (contended), on 1 and 2 workers, against a std::mutex-protected counter driven by the same
//     number of threads; short bodies and long ones.
//  2. The place's lock alone (atomic_lock) against std::mutex and a spin lock, on plain threads:
//     blocks per second, and the CPU time used per block (a waiter that spins burns CPU that
//     the holder, or another place, could use; a waiter that sleeps burns none). CPU time per
//     block holds up on a loaded machine better than CPU per second of wall time.
//  3. A bounded buffer (capacity 4): items per second with producers and consumers in `when`,
//     against std::mutex + std::condition_variable with as many producer and consumer threads.
//
// Each figure is the best of --reps runs after a warm-up run; every run's result is checked (a
// wrong count exits 1). Ratios are apgas / peer (above 1: apgas is faster).
//
// Bodies: short (an increment), medium (200 multiply-adds, a fraction of a microsecond) and
// long (5000: longer than a waiter's spin, so that its waiters sleep).
//
//   bench_atomic [--reps R] [--quick] [--blocks N] [--items N]
//                [--only blocks,lock,buffer]
#include <apgas/apgas.hpp>
#include <apgas/detail/atomic_lock.hpp>
#include <apgas/detail/spin_lock.hpp>

#include "atomic_stream.hpp"
#include "machine_state.hpp"
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

struct settings {
  int reps = 5;
  std::uint64_t blocks = 2'000'000;        ///< atomic blocks per measurement (short bodies)
  std::uint64_t items = 300'000;           ///< items through the bounded buffer per measurement
  std::string only = "blocks,lock,buffer"; ///< the sections to run
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_atomic: %s\nusage: bench_atomic [--reps R] [--quick] [--blocks N] "
               "[--items N] [--only blocks,lock,buffer]\n",
               why);
  std::exit(2);
}

settings parse(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&]() -> unsigned long long {
      if (i + 1 >= argc) usage("a flag lacks its value");
      return std::strtoull(argv[++i], nullptr, 10);
    };
    if (a == "--reps") s.reps = static_cast<int>(value());
    else if (a == "--blocks") s.blocks = value();
    else if (a == "--items") s.items = value();
    else if (a == "--only") {
      if (i + 1 >= argc) usage("--only lacks its value");
      s.only = argv[++i];
    } else if (a == "--quick") {
      s.reps = 1;
      s.blocks = 100'000;
      s.items = 50'000;
    } else usage("unknown flag");
  }
  if (s.reps < 1 || s.blocks < 4 || s.items < 32) usage("sizes too small");
  return s;
}

/// Process CPU time, all threads.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// A run's wall time and the CPU time the process used meanwhile.
struct timing {
  double seconds;
  double cpu;
};

/// The fastest of `reps` runs of `run` (which returns its timing), after a warm-up run.
template <class Run>
timing best_of(int reps, Run run) {
  (void)run();
  timing best{1e300, 0};
  for (int r = 0; r < reps; ++r) {
    const timing t = run();
    if (t.seconds < best.seconds) best = t;
  }
  return best;
}

template <class F>
timing timed(F f) {
  const double cpu0 = cpu_seconds();
  const auto t0 = clock_type::now();
  f();
  const double wall = std::chrono::duration<double>(clock_type::now() - t0).count();
  return {wall, cpu_seconds() - cpu0};
}

int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "bench_atomic: WRONG RESULT: %s\n", what.c_str());
  ++g_failures;
}

apgas::options worker_options(unsigned workers) {
  apgas::options o;
  o.threads = workers;
  o.pin_workers = false; // the peers' threads are not pinned either
  return o;
}

/// Runs `threads` threads of `body(index)` and waits for them.
template <class Body>
void run_threads(unsigned threads, Body body) {
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back([&body, t] { body(t); });
  for (auto& th : pool) th.join();
}

// ---- 1. atomic blocks ---------------------------------------------------------------------

timing apgas_blocks(apgas::runtime& rt, unsigned activities, std::uint64_t blocks, unsigned work) {
  apgas_bench::atomic_counter c;
  const std::uint64_t each = blocks / activities;
  timing t{};
  rt.run([&]() -> apgas::task<> {
    const double cpu0 = cpu_seconds();
    const auto t0 = clock_type::now();
    co_await apgas_bench::atomic_stream(c, activities, each, work);
    t = {std::chrono::duration<double>(clock_type::now() - t0).count(), cpu_seconds() - cpu0};
  });
  check(c.blocks == each * activities,
        fmt::format("apgas counted {} blocks of {}", c.blocks, each * activities));
  return t;
}

template <class Lock>
timing locked_blocks(unsigned threads, std::uint64_t blocks, unsigned work) {
  Lock lock;
  apgas_bench::atomic_counter c;
  const std::uint64_t each = blocks / threads;
  const timing t = timed([&] {
    run_threads(threads, [&](unsigned) {
      for (std::uint64_t i = 0; i < each; ++i) {
        std::lock_guard guard(lock);
        c.mix = apgas_bench::busy_work(c.mix, work);
        ++c.blocks;
      }
    });
  });
  check(c.blocks == each * threads,
        fmt::format("a lock counted {} blocks of {}", c.blocks, each * threads));
  return t;
}

/// A length of atomic body: busy_work iterations, and the share of --blocks to run.
struct body_kind {
  const char* name;
  unsigned work;
  std::uint64_t divisor;
};
constexpr std::array<body_kind, 3> k_bodies{
    {{"short", 0, 1}, {"medium", 200, 20}, {"long", 5000, 500}}};

double per_second(std::uint64_t n, const timing& t) { return static_cast<double>(n) / t.seconds; }

void atomic_blocks_section(const settings& s) {
  std::printf("\n1. Atomic blocks per second (millions), apgas atomic vs std::mutex\n");
  std::printf("%-7s %-8s %-30s %10s %10s %7s\n", "body", "workers", "case", "apgas", "mutex",
              "ratio");
  for (const body_kind& body : k_bodies) {
    const unsigned work = body.work;
    const std::uint64_t blocks = s.blocks / body.divisor;
    for (const unsigned workers : {1U, 2U}) {
      apgas::runtime rt(worker_options(workers));
      // Uncontended: one activity (one thread); contended: one per worker (per thread).
      for (const unsigned contenders : {1U, workers}) {
        const timing a =
            best_of(s.reps, [&] { return apgas_blocks(rt, contenders, blocks, work); });
        const timing m =
            best_of(s.reps, [&] { return locked_blocks<std::mutex>(contenders, blocks, work); });
        const std::string what = contenders == 1
                                     ? "uncontended: 1 activity/thread"
                                     : fmt::format("contended: {} activities/threads", contenders);
        std::printf("%-7s %-8u %-30s %10.2f %10.2f %7.2f\n", body.name, workers, what.c_str(),
                    per_second(blocks, a) / 1e6, per_second(blocks, m) / 1e6,
                    m.seconds / a.seconds);
        if (workers == 1) break; // one worker: one activity at a time holds the lock
      }
    }
  }
}

// ---- 2. the lock alone -------------------------------------------------------------------

/// This thread's CPU time.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

/// The CPU time a thread uses waiting for a lock that another holds for `hold`, averaged over
/// `rounds` waits: what a waiter takes from the holder and from other places' workers. Unlike
/// throughput, this holds up on a loaded machine.
template <class Lock>
double waiter_cpu_seconds(std::chrono::microseconds hold, int rounds) {
  double total = 0;
  for (int r = 0; r < rounds; ++r) {
    Lock lock;
    std::atomic<bool> held{false};
    std::thread holder([&] {
      lock.lock();
      held.store(true); // seq_cst (the default): a flag of the benchmark, not a hot path
      const auto until = clock_type::now() + hold;
      while (clock_type::now() < until) {
      }
      lock.unlock();
    });
    while (!held.load()) std::this_thread::yield();
    const double t0 = thread_cpu_seconds();
    lock.lock();
    total += thread_cpu_seconds() - t0;
    lock.unlock();
    holder.join();
  }
  return total / rounds;
}

void waiter_section(int reps) {
  constexpr auto k_hold = std::chrono::microseconds(1000);
  const int rounds = 10 * reps;
  std::printf("\n   CPU time a waiter uses while another thread holds the lock for %lld us "
              "(mean of %d waits)\n",
              static_cast<long long>(k_hold.count()), rounds);
  std::printf("   %18s %18s %18s\n", "atomic_lock", "std::mutex", "spin_lock");
  std::printf("   %15.1f us %15.1f us %15.1f us\n",
              waiter_cpu_seconds<apgas::detail::atomic_lock>(k_hold, rounds) * 1e6,
              waiter_cpu_seconds<std::mutex>(k_hold, rounds) * 1e6,
              waiter_cpu_seconds<apgas::detail::spin_lock>(k_hold, rounds) * 1e6);
}

void lock_section(const settings& s) {
  std::printf("\n2. The place's lock on plain threads: blocks per second (millions) and CPU "
              "time per block\n");
  std::printf("%-7s %-8s %18s %18s %18s %7s\n", "body", "threads", "atomic_lock", "std::mutex",
              "spin_lock", "ratio");
  for (const body_kind& body : k_bodies) {
    const unsigned work = body.work;
    const std::uint64_t blocks = s.blocks / body.divisor;
    for (const unsigned threads : {1U, 2U, 4U}) {
      const timing a = best_of(
          s.reps, [&] { return locked_blocks<apgas::detail::atomic_lock>(threads, blocks, work); });
      const timing m =
          best_of(s.reps, [&] { return locked_blocks<std::mutex>(threads, blocks, work); });
      const timing k = best_of(
          s.reps, [&] { return locked_blocks<apgas::detail::spin_lock>(threads, blocks, work); });
      auto cell = [&](const timing& t) {
        return fmt::format("{:7.2f} {:7.0f} ns", per_second(blocks, t) / 1e6,
                           t.cpu / static_cast<double>(blocks) * 1e9);
      };
      std::printf("%-7s %-8u %18s %18s %18s %7.2f\n", body.name, threads, cell(a).c_str(),
                  cell(m).c_str(), cell(k).c_str(), m.seconds / a.seconds);
    }
  }
  waiter_section(s.reps);
}

// ---- 3. bounded buffer -------------------------------------------------------------------

constexpr std::size_t k_capacity = 4;

struct ring {
  std::array<std::uint64_t, k_capacity> slots{};
  std::size_t head = 0;
  std::size_t count = 0;
  void put(std::uint64_t v) {
    slots[(head + count) % k_capacity] = v;
    ++count;
  }
  std::uint64_t take() {
    const std::uint64_t v = slots[head];
    head = (head + 1) % k_capacity;
    --count;
    return v;
  }
};

apgas::task<> producer(ring& r, std::uint64_t first, std::uint64_t step, std::uint64_t end) {
  for (std::uint64_t v = first; v < end; v += step)
    co_await apgas::when([&r] { return r.count < k_capacity; }, [&r, v] { r.put(v); });
}

apgas::task<> consumer(ring& r, std::uint64_t items, std::uint64_t& sum) {
  std::uint64_t local = 0;
  for (std::uint64_t i = 0; i < items; ++i)
    local += co_await apgas::when([&r] { return r.count > 0; }, [&r] { return r.take(); });
  co_await apgas::atomic([&] { sum += local; });
}

std::uint64_t expected_sum(std::uint64_t items) { return items * (items - 1) / 2; }

timing apgas_buffer(apgas::runtime& rt, unsigned pairs, std::uint64_t items) {
  ring r;
  std::uint64_t sum = 0;
  timing t{};
  rt.run([&]() -> apgas::task<> {
    const double cpu0 = cpu_seconds();
    const auto t0 = clock_type::now();
    co_await apgas::finish([&]() -> apgas::task<> {
      for (unsigned c = 0; c < pairs; ++c) co_await apgas::async(consumer(r, items / pairs, sum));
      for (unsigned p = 0; p < pairs; ++p) co_await apgas::async(producer(r, p, pairs, items));
    });
    t = {std::chrono::duration<double>(clock_type::now() - t0).count(), cpu_seconds() - cpu0};
  });
  check(sum == expected_sum(items), fmt::format("apgas buffer: sum {} of items", sum));
  return t;
}

timing condvar_buffer(unsigned pairs, std::uint64_t items) {
  ring r;
  std::mutex m;
  std::condition_variable not_full;
  std::condition_variable not_empty;
  std::uint64_t sum = 0;
  const timing t = timed([&] {
    run_threads(2 * pairs, [&](unsigned index) {
      if (index < pairs) {
        for (std::uint64_t v = index; v < items; v += pairs) {
          std::unique_lock lock(m);
          not_full.wait(lock, [&] { return r.count < k_capacity; });
          r.put(v);
          lock.unlock();
          not_empty.notify_one();
        }
      } else {
        std::uint64_t local = 0;
        for (std::uint64_t i = 0; i < items / pairs; ++i) {
          std::unique_lock lock(m);
          not_empty.wait(lock, [&] { return r.count > 0; });
          local += r.take();
          lock.unlock();
          not_full.notify_one();
        }
        const std::lock_guard guard(m);
        sum += local;
      }
    });
  });
  check(sum == expected_sum(items), fmt::format("condvar buffer: sum {} of items", sum));
  return t;
}

void buffer_section(const settings& s) {
  std::printf("\n3. Bounded buffer (capacity %zu): items per second (millions), apgas when vs "
              "std::mutex + std::condition_variable\n",
              k_capacity);
  std::printf("%-8s %-36s %10s %10s %7s\n", "workers", "producers + consumers", "apgas", "condvar",
              "ratio");
  for (const unsigned workers : {1U, 2U}) {
    apgas::runtime rt(worker_options(workers));
    for (const unsigned pairs : {1U, 16U}) {
      const std::uint64_t items = s.items / pairs * pairs;
      const timing a = best_of(s.reps, [&] { return apgas_buffer(rt, pairs, items); });
      const timing c = best_of(s.reps, [&] { return condvar_buffer(pairs, items); });
      const std::string what = fmt::format("{0} + {0} (activities; threads)", pairs);
      std::printf("%-8u %-36s %10.2f %10.2f %7.2f\n", workers, what.c_str(),
                  per_second(items, a) / 1e6, per_second(items, c) / 1e6, c.seconds / a.seconds);
    }
  }
}

} // namespace

int main(int argc, char** argv) {
  const settings s = parse(argc, argv);
  std::printf("bench_atomic: best of %d runs\n", s.reps);
  apgas_bench::print_machine_state();
  auto wanted = [&](std::string_view section) { return s.only.find(section) != std::string::npos; };
  if (wanted("blocks")) atomic_blocks_section(s);
  if (wanted("lock")) lock_section(s);
  if (wanted("buffer")) buffer_section(s);
  if (g_failures != 0) {
    std::fprintf(stderr, "bench_atomic: %d wrong results\n", g_failures);
    return 1;
  }
  return 0;
}
