/// @file The runtime object: owns the workers of this place for its lifetime.
///
///     int main(int argc, char** argv) {
///       apgas::runtime rt(argc, argv);          // consumes --threads, --policy, ...
///       long r = rt.run(fib(30));               // blocks until fib and all it started end
///     }
#pragma once

#include "apgas/detail/scheduler.hpp"
#include "apgas/options.hpp"
#include "apgas/task.hpp"

#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

namespace apgas {

/// @brief The apgas runtime of this process. At most one exists at a time.
/// Thread-safety: run() may be called from one non-worker thread at a time.
class runtime {
public:
  /// @brief Reads APGAS_* variables and consumes the runtime's flags from argv.
  /// @throws usage_error on a bad flag value.
  runtime(int& argc, char** argv);
  /// @brief Starts with the given options.
  explicit runtime(const options& opts = options::from_env());
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
  /// Stops the workers; prints the statistics table to stderr if options::stats.
  ~runtime();

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
  /// @brief The runtime of this process, or null.
  static runtime* current() noexcept;

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

  std::unique_ptr<detail::scheduler> m_sched;
};

} // namespace apgas
