// How a place ends when the job is stopped or the program fails: with one line the user reads.
//
//   SIGTERM, SIGINT        "apgas: place 1: stopped by SIGTERM", then the signal's default
//                          action (mpiexec passes the signal on to every rank, Slurm's scancel
//                          sends SIGTERM to every task: each place says so once)
//   uncaught exception     "apgas: place 1: uncaught apgas::multiple_exceptions: 1 activity
//                          failed: at place 3: ...", then exit code 1 (std::terminate's abort
//                          would make Open MPI print a backtrace at every rank)
//
// Nothing keeps a place alive: a signal still ends it, as it would without the handler.
#pragma once

#include "apgas/detail/transport.hpp"

#include <exception>

namespace apgas::detail {

/// @brief Installs the handlers that report a fatal exit (a signal, an uncaught exception) for
/// the runtime's lifetime, and restores what was there before.
/// A signal the program handles or ignores itself (anything but SIG_DFL) is left alone.
/// One at a time per process. Thread-safety: construct and destroy on one thread.
class fatal_exit_handlers {
public:
  explicit fatal_exit_handlers(place_id here);
  fatal_exit_handlers(const fatal_exit_handlers&) = delete;
  fatal_exit_handlers& operator=(const fatal_exit_handlers&) = delete;
  ~fatal_exit_handlers();

private:
  std::terminate_handler m_previous_terminate;
  bool m_installed_term = false;
  bool m_installed_int = false;
};

} // namespace apgas::detail
