/// @file The one-place runtime: owns the workers of this process for its lifetime. Programs
/// normally use apgas::runtime (<apgas/runtime.hpp>), which adds places on top of this one;
/// local_runtime is for code that needs no places (and the core's own tests).
///
///     int main(int argc, char** argv) {
///       apgas::local_runtime rt(argc, argv);    // consumes --threads, --policy, ...
///       long r = rt.run(fib(30));               // blocks until fib and all it started end
///     }
#pragma once

#include "apgas/detail/scheduler.hpp"
#include "apgas/options.hpp"
#include "apgas/task.hpp"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

namespace apgas {

/// @brief The one-place runtime of this process. At most one exists at a time.
/// Thread-safety: run() may be called from one non-worker thread at a time.
class local_runtime {
public:
  /// @brief Reads APGAS_* variables and consumes the runtime's flags from argv.
  /// @throws usage_error on a bad flag value.
  local_runtime(int& argc, char** argv);
  /// @brief Starts with the given options.
  explicit local_runtime(const options& opts = options::from_env());
  local_runtime(const local_runtime&) = delete;
  local_runtime& operator=(const local_runtime&) = delete;
  /// Stops the workers; prints the statistics table to stderr if options::stats.
  ~local_runtime();

  /// @brief Runs `main` (a task<T>, or a callable returning one) as the root activity and waits
  /// for it and every activity it started transitively.
  /// @return the root task's value. @throws multiple_exceptions if activities failed.
  template <class Main>
  auto run(Main&& main) {
    if constexpr (detail::is_task_v<Main>) {
      return run_task(std::forward<Main>(main));
    } else {
      return run_task(main()); // `main` outlives the run: it is the caller's object
    }
  }

  /// @brief Worker threads of this place.
  unsigned threads() const noexcept { return m_sched->worker_count(); }
  /// @brief Workers parked (or about to park) right now: a hint, for tests and monitoring.
  unsigned parked_workers() const noexcept { return m_sched->parked_workers(); }
  /// @brief The options in force (threads resolved).
  const options& opts() const noexcept { return m_sched->opts(); }
  /// @brief Names this place in the statistics table and progress lines (set by the places
  /// layer).
  void set_place_label(unsigned here, unsigned places) noexcept {
    std::lock_guard guard(m_progress_mutex);
    m_place = here;
    m_places = places;
  }
  /// @brief Adds `extra()` to every progress line (the places layer's message counts). It
  /// runs on the progress thread: it must only read thread-safe figures.
  void set_progress_extra(std::function<std::string()> extra) {
    std::lock_guard guard(m_progress_mutex);
    m_progress_extra = std::move(extra);
  }
  /// @brief With options::trace: writes this place's trace file, once, and at one place also
  /// the joined trace.json (the places layer joins those of several places). Called by the
  /// destructor if not before. pre: the workers have stopped (sched().stop()).
  void write_trace();
  /// @brief The scheduler of this place (for the places layer).
  detail::scheduler& sched() noexcept { return *m_sched; }
  /// @brief The runtime of this process, or null.
  static local_runtime* current() noexcept;

private:
  template <class T>
  T run_task(task<T> t) {
    if constexpr (std::is_void_v<T>) {
      auto h = t.release();
      m_sched->run_root(h.promise());
    } else {
      std::optional<T> result;
      auto root = [](task<T> inner, std::optional<T>& out) -> task<> {
        out.emplace(co_await std::move(inner));
      }(std::move(t), result);
      auto h = root.release();
      m_sched->run_root(h.promise());
      return std::move(*result);
    }
  }
  void print_stats() const;
  void progress_loop();
  void stop_progress();

  std::unique_ptr<detail::scheduler> m_sched;
  // Progress lines (options::progress_ms): a thread that prints while the runtime lives.
  mutable std::mutex m_progress_mutex; ///< guards the fields below
  std::condition_variable m_progress_cv;
  bool m_progress_stop = false;
  std::function<std::string()> m_progress_extra;
  unsigned m_place = 0;
  unsigned m_places = 1;
  bool m_trace_written = false;
  std::thread m_progress; ///< last: started after everything it reads
};

/// @brief The number of worker threads of this place. pre: called from an activity.
inline unsigned workers_here() noexcept { return detail::t_worker->sched().worker_count(); }

} // namespace apgas
