/// @file What the multi-place benchmarks share: MPI start-up for the raw-MPI peers, flag
/// parsing, sample statistics and a watchdog. Message counts come from the runtime
/// (apgas::total_message_counts).
///
/// Why the raw-MPI peers run BEFORE the apgas runtime exists: the runtime asks MPI for
/// MPI_THREAD_SERIALIZED (one thread at a time in MPI), and its idle workers poll MPI on their
/// own communicator at any time, also between two run() calls (they park for at most 8 ms and
/// poll on waking). A main thread calling MPI on MPI_COMM_WORLD meanwhile would be a second
/// thread inside MPI at the same time: outside the standard at SERIALIZED. So each benchmark
/// initialises MPI itself at the level the runtime asks for, measures the raw-MPI peer while
/// no other thread exists, and only then creates the runtime, which accepts an MPI that is
/// already initialised (and finalises it at the end). Both sides are measured in one process
/// and one mpiexec run, on the same ranks, with the same MPI settings.
#pragma once

#include <apgas/apgas.hpp>
#include <apgas/detail/message_dispatcher.hpp>

#include "../machine_state.hpp"
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace apgas_bench {

using clock = std::chrono::steady_clock;

inline double seconds_since(clock::time_point t0) {
  return std::chrono::duration<double>(clock::now() - t0).count();
}

/// @brief MPI_Init_thread before the runtime (see the file comment). `level` is what the
/// runtime asks for unless a benchmark has a reason to ask for more.
/// @return the thread level MPI provides.
inline int init_mpi(int& argc, char**& argv, int level = MPI_THREAD_SERIALIZED) {
  int provided = MPI_THREAD_SINGLE;
  if (MPI_Init_thread(&argc, &argv, level, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "MPI_Init_thread failed\n");
    std::exit(2);
  }
  // Ours to finalise (a runtime leaves an MPI it did not initialise alone). At exit: after
  // main's runtime is gone.
  std::atexit([] {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized == 0) MPI_Finalize();
  });
  return provided;
}

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

/// @brief Ends the job from any rank, before or after the runtime exists.
[[noreturn]] inline void fail(const std::string& why) {
  std::fprintf(stderr, "rank %d: FAILED: %s\n", world_rank(), why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::exit(1);
}

inline const char* thread_level_name(int level) {
  switch (level) {
  case MPI_THREAD_SINGLE:
    return "MPI_THREAD_SINGLE";
  case MPI_THREAD_FUNNELED:
    return "MPI_THREAD_FUNNELED";
  case MPI_THREAD_SERIALIZED:
    return "MPI_THREAD_SERIALIZED";
  case MPI_THREAD_MULTIPLE:
    return "MPI_THREAD_MULTIPLE";
  default:
    return "?";
  }
}

/// @brief The runtime's flags and APGAS_* variables, taken out of argv (the rest are the
/// benchmark's, see flags). A bad one ends the run with its message and exit code 2, like a
/// bad flag of the benchmark's own, instead of an uncaught exception.
inline apgas::options runtime_options(int& argc, char** argv) {
  try {
    return apgas::options::from_env_and_args(argc, argv);
  } catch (const apgas::usage_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(2);
  }
}

/// @brief The benchmark's own flags: what is left of argv once the runtime has consumed its
/// flags (options::from_env_and_args). Unknown flags end the run: a typo must not silently
/// measure the default.
class flags {
public:
  flags(int argc, char** argv) : m_args(argv + 1, argv + argc), m_used(m_args.size(), false) {}

  template <class T>
  T get(std::string_view name, T fallback) {
    if constexpr (std::is_same_v<T, std::string>) m_known.emplace_back(name, fallback);
    else m_known.emplace_back(name, fmt::format("{}", fallback));
    for (std::size_t i = 0; i + 1 < m_args.size(); ++i) {
      if (m_args[i] != name) continue;
      m_used[i] = m_used[i + 1] = true;
      const std::string& text = m_args[i + 1];
      if constexpr (std::is_same_v<T, std::string>) {
        return text;
      } else {
        T v{};
        auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc{} || p != text.data() + text.size())
          usage(fmt::format("{}: bad value '{}'", name, text));
        return v;
      }
    }
    return fallback;
  }
  bool has(std::string_view name) {
    m_known.emplace_back(name, std::string());
    for (std::size_t i = 0; i < m_args.size(); ++i)
      if (m_args[i] == name) return m_used[i] = true;
    return false;
  }
  /// Call after the last get(): answers --help (every flag asked for, with its default, then
  /// the runtime's options) and rejects what nobody asked for.
  void done() const {
    for (const std::string& a : m_args)
      if (a == "--help" || a == "-h") help();
    for (std::size_t i = 0; i < m_args.size(); ++i)
      if (!m_used[i]) usage(fmt::format("unknown argument '{}'", m_args[i]));
  }

private:
  [[noreturn]] void help() const {
    // Before MPI starts (done() comes first): the launcher's variable says which rank this is.
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (rank == nullptr || std::string_view(rank) == "0") {
      std::printf("flags (the file's header comment says what each measures):\n");
      for (const auto& [name, fallback] : m_known)
        std::printf("  %-22s %s\n", name.c_str(),
                    fallback.empty() ? "(a switch)" : ("default " + fallback).c_str());
      std::printf("\nruntime options:\n%s", apgas::options::help_text().c_str());
      std::fflush(stdout);
    }
    std::exit(0);
  }
  [[noreturn]] static void usage(const std::string& why) {
    std::fprintf(stderr, "%s (runtime flags: --threads N, --coalesce yes|no, --flush-us N, ...)\n",
                 why.c_str());
    std::exit(2);
  }
  std::vector<std::string> m_args;
  std::vector<bool> m_used;
  std::vector<std::pair<std::string, std::string>> m_known; ///< flags asked for, defaults
};

/// @brief Median, 90th percentile, mean and minimum of a set of samples.
struct summary {
  double median = 0, p90 = 0, mean = 0, min = 0;
};

inline summary summarize(std::vector<double> v) {
  summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  // Nearest-rank percentiles: a sample that was really measured, no interpolation.
  const auto rank = [&](double q) {
    const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
  };
  s.median = rank(0.5);
  s.p90 = rank(0.9);
  s.min = v.front();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

/// @brief Ends a hung benchmark loudly instead of letting a script wait forever: if the
/// program has not finished after `seconds`, prints what this place knows (the phase, its
/// open distributed finishes, its message counters) to stderr and aborts the job. Every
/// place runs one; the first to fire ends the job. Uses only calls documented as callable
/// from any thread (runtime::message_stats, message_dispatcher::describe_state).
class watchdog {
public:
  watchdog(const apgas::runtime& rt, double seconds) : m_rt(rt) {
    if (seconds <= 0) return;
    m_thread = std::thread([this, seconds] {
      std::unique_lock lock(m_mutex);
      if (m_cv.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return m_done; }))
        return;
      const std::string open = apgas::detail::message_dispatcher::current().describe_state();
      std::fprintf(stderr,
                   "watchdog: place %u: no end after %.0f s in phase '%s'\n"
                   "%s%s",
                   m_rt.here(), seconds, phase().load(), open.empty() ? "  (none)\n" : open.c_str(),
                   m_rt.message_stats().c_str());
      std::fflush(stderr);
      std::this_thread::sleep_for(std::chrono::seconds(2)); // let the other places print too
      MPI_Abort(MPI_COMM_WORLD, 3);
    });
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;
  ~watchdog() {
    if (!m_thread.joinable()) return;
    {
      std::lock_guard guard(m_mutex);
      m_done = true;
    }
    m_cv.notify_all();
    m_thread.join();
  }
  /// What the program is doing (set by main; printed if the watchdog fires).
  static std::atomic<const char*>& phase() {
    static std::atomic<const char*> p{"start"};
    return p;
  }

private:
  const apgas::runtime& m_rt;
  std::mutex m_mutex;
  std::condition_variable m_cv;
  bool m_done = false;
  std::thread m_thread;
};

/// @brief The runtime's configuration and the machine's state as the run starts (printed by
/// every benchmark): two lines, and a third with a warning when the machine is not quiet.
inline std::string describe(const apgas::runtime& rt, int mpi_level) {
  const auto& o = rt.opts();
  const machine_state machine = read_machine_state();
  const std::string warning = load_warning(machine);
  return fmt::format("places {}, threads/place {}, coalesce {}, coalesce-bytes {}, flush-us {}, "
                     "spin {}, MPI {}\n  {}{}{}",
                     rt.places(), rt.threads(), o.coalesce ? "yes" : "no", o.coalesce_bytes,
                     o.flush_us, o.spin_us, thread_level_name(mpi_level), describe_machine(machine),
                     warning.empty() ? "" : "\n  ", warning);
}

} // namespace apgas_bench
