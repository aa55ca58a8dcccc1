/// @file The runtime: one per process, one place per MPI rank.
///
///     int main(int argc, char** argv) {
///       apgas::runtime rt(argc, argv);    // MPI when launched by mpirun; else one place
///       long r = rt.run(fib(30));         // place 0 runs it; every place gets its value
///       return r == 832040 ? 0 : 1;
///     }
///
/// Every place executes main(): run() is collective. Place 0 runs the task as the root
/// activity while the other places serve the activities sent to them; when it and everything
/// it started (anywhere) have ended, every place's run() returns its value (serialized from
/// place 0) or throws.
#pragma once

#include "apgas/local_runtime.hpp"
#include "apgas/place.hpp"
#include "apgas/serialization.hpp"

#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace apgas {

namespace detail {
class fatal_exit_handlers;
class message_dispatcher;
class run_protocol;
} // namespace detail

/// @brief The apgas runtime of this process: the workers of this place and its link to the
/// other places. Thread-safety: run() from the main thread; the rest from any thread.
class runtime {
public:
  /// @brief Starts this place: reads APGAS_* variables and consumes the runtime's flags from
  /// argv (those `--help` lists: argc and argv keep the program's own arguments, and
  /// everything after `--`); initialises MPI when launched by mpirun (checking the thread level
  /// it gets), or uses the MPI the program already initialised. Every place checks that all run
  /// the same build of the program; if not, the job ends (exit code 1) with a message naming
  /// them. Until it is destroyed, SIGTERM, SIGINT and an uncaught exception end the place with
  /// one line on stderr saying so (an exception: exit code 1).
  ///
  /// For a program's command line: `--help` (or `-h`) prints the runtime's options and ends the
  /// process with exit code 0; a bad flag or APGAS_* value prints one line (at place 0, or at the
  /// lowest place that has it) and ends every place with exit code 2; an APGAS_* variable that is
  /// no option gets a warning. A program with a --help of its own makes its options with
  /// options::from_env_and_args (which leaves --help alone) and shows options::help_text() in
  /// it.
  /// @throws std::runtime_error if MPI cannot be used.
  runtime(int& argc, char** argv);
  /// @brief Starts this place with the options of the APGAS_* variables (a bad value: one line
  /// and exit code 2, as above).
  runtime();
  /// @brief Starts this place with the given options (MPI when launched by mpirun).
  explicit runtime(const options& opts);
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;
  /// Collective: waits for every place, stops the workers, prints statistics if asked,
  /// finalises MPI if the runtime initialised it (a program that called MPI_Init itself
  /// finalises it itself, and may create another runtime meanwhile).
  ~runtime();

  /// @brief Collective. Place 0 runs `main` (a task<T>, or a callable returning one) as the
  /// root activity and waits for it and every activity it started, at any place.
  /// @return the root task's value, at every place (T must then be serializable).
  /// @throws what the run failed with, at every place: at place 0 as it is (usually the root
  /// finish's multiple_exceptions), at the others as it arrives from place 0 (the same
  /// structure, each failure of its own type and with its place: <apgas/remote_exceptions.hpp>).
  template <class Main>
  auto run(Main&& main) {
    using T = typename main_task<std::decay_t<Main>>::type::value_type;
    static_assert(std::is_void_v<T> || serializable<T>,
                  "apgas: runtime::run returns the root task's value at every place, so it must "
                  "be serializable (or return task<void>)");
    if (here() != 0) return take_result<T>();
    try {
      if constexpr (std::is_void_v<T>) {
        if constexpr (detail::is_task_v<Main>) m_local->run(std::forward<Main>(main));
        else m_local->run(main());
        end_run({});
        return;
      } else {
        T value = [&] {
          if constexpr (detail::is_task_v<Main>) return m_local->run(std::forward<Main>(main));
          else return m_local->run(main());
        }();
        std::vector<std::byte> bytes;
        byte_writer w(bytes);
        serialize(w, value);
        end_run(bytes);
        return value;
      }
    } catch (...) {
      fail_run(std::current_exception());
      throw;
    }
  }

  /// @brief This place.
  place_id here() const noexcept;
  /// @brief The number of places.
  place_id places() const noexcept;
  /// @brief Worker threads of this place.
  unsigned threads() const noexcept { return m_local->threads(); }
  /// @brief The options in force (threads resolved).
  const options& opts() const noexcept { return m_local->opts(); }
  /// @brief Workers parked right now (a hint).
  unsigned parked_workers() const noexcept { return m_local->parked_workers(); }
  /// @brief Turns the coalescing of this place's messages on or off from now on (the option
  /// --coalesce sets it at start). Not collective: for the whole job, call it at every place,
  /// for example between two run() calls. A latency-bound phase of a program may want it off.
  void set_coalescing(bool on);
  /// @brief Network messages this place sent so far (coalesced MPI messages).
  std::uint64_t mpi_messages_sent() const;
  /// @brief Finish cleanup messages this place sent so far (a finish control message).
  std::uint64_t cleanups_sent() const;
  /// @brief Finish reports this place sent so far (a finish control message).
  std::uint64_t reports_sent() const;
  /// @brief Requests for held finish reports this place sent so far (a finish control message).
  std::uint64_t asks_sent() const;
  /// @brief Held finish reports this place sent unasked, their hold expired (see
  /// options::report_delay_us): 0 unless asks come late.
  std::uint64_t holds_expired() const;
  /// @brief Message statistics of this place, one table (what APGAS_STATS=1 prints).
  std::string message_stats() const;

private:
  template <class M, bool = detail::is_task_v<M>>
  struct main_task {
    using type = M;
  };
  template <class M>
  struct main_task<M, false> {
    using type = std::invoke_result_t<M&>;
  };

  void start(const options& opts, const std::string& bad_usage, int* argc, char*** argv);
  /// Collective when launched by mpirun: if any place's command line was bad, the lowest such
  /// place prints its line and every place ends with exit code 2.
  void end_job_if_any_place_has(const std::string& bad_usage);
  /// Place 0: the run ended with this value (serialized).
  void end_run(std::span<const std::byte> value);
  /// Place 0: the run failed with `error`.
  void fail_run(std::exception_ptr error);
  /// Places other than 0: the value of the run place 0 ended; throws its error if it failed.
  std::vector<std::byte> wait_run_end();

  template <class T>
  T take_result() {
    [[maybe_unused]] const std::vector<std::byte> payload = wait_run_end();
    if constexpr (!std::is_void_v<T>) {
      byte_reader r(payload);
      return deserialize<T>(r);
    }
  }

  struct mpi_session;
  /// One line at a place's end by a signal or an uncaught exception; the last to go.
  std::unique_ptr<detail::fatal_exit_handlers> m_fatal_exit_handlers;
  std::unique_ptr<mpi_session> m_mpi;     ///< MPI_Init .. MPI_Finalize, if launched
  std::unique_ptr<local_runtime> m_local; ///< the workers of this place
  /// The place's message dispatcher and its protocol modules (owned by the dispatcher).
  std::unique_ptr<detail::message_dispatcher> m_dispatcher;
  detail::run_protocol* m_runs = nullptr;
};

} // namespace apgas
