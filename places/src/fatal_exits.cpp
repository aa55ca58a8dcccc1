// How a place ends on SIGTERM, SIGINT or an uncaught exception (see fatal_exits.hpp).
#include "fatal_exits.hpp"

#include "apgas/exceptions.hpp"
#include "apgas/place.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace apgas::detail {

namespace {

// Who reports the place's end: the first signal or uncaught exception, once. A lock-free
// atomic, so that a signal handler may use it.
enum : int { k_running = 0, k_reporting = 1 };
std::atomic<int> g_state{k_running};
static_assert(std::atomic<int>::is_always_lock_free);

// The signal lines, written before any handler is installed (a handler may not format).
std::array<char, 96> g_term_line{};
std::array<char, 96> g_int_line{};
place_id g_here = 0;
std::terminate_handler g_previous_terminate = nullptr;

void write_all(const char* text, std::size_t size) noexcept {
  while (size > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, size);
    if (n <= 0) return;
    text += n;
    size -= static_cast<std::size_t>(n);
  }
}

extern "C" void on_stop_signal(int sig) {
  const int saved_errno = errno;
  int expected = k_running;
  // relaxed: only who wins matters; the lines were written before any handler was installed.
  if (!g_state.compare_exchange_strong(expected, k_reporting, std::memory_order_relaxed)) {
    // Another thread reports (an uncaught exception, or a signal) and ends the place itself; a
    // second line would only repeat it. (mpiexec sends SIGTERM to every rank when one fails.)
    errno = saved_errno; // the interrupted code goes on
    return;
  }
  const char* line = sig == SIGTERM ? g_term_line.data() : g_int_line.data();
  write_all(line, std::strlen(line));
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string describe_uncaught(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const multiple_exceptions& m) {
    return std::string("apgas::multiple_exceptions: ") + m.what(); // bounded: the first only
  } catch (...) {
    return describe_current_exception();
  }
}

[[noreturn]] void on_terminate() noexcept {
  const std::exception_ptr e = std::current_exception();
  if (!e) { // not an exception: std::terminate called for another reason, as usual then
    if (g_previous_terminate != nullptr) g_previous_terminate();
    std::abort();
  }
  int expected = k_running;
  // relaxed: see on_stop_signal.
  if (!g_state.compare_exchange_strong(expected, k_reporting, std::memory_order_relaxed)) {
    for (;;) ::pause(); // another thread reports and ends the place
  }
  std::string line;
  try {
    line = fmt::format("apgas: place {}: uncaught {}\n", g_here, describe_uncaught(e));
  } catch (...) {
    line = "apgas: uncaught exception\n";
  }
  std::fflush(stdout); // what the program printed so far
  write_all(line.data(), line.size());
  std::_Exit(1); // static destructors would run while the workers still do
}

bool install_if_default(int sig) {
  struct sigaction old {};
  if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) != 0 ||
      old.sa_handler != SIG_DFL)
    return false;
  struct sigaction act {};
  act.sa_handler = &on_stop_signal;
  act.sa_flags = SA_RESTART; // it returns only while another thread ends the place
  sigemptyset(&act.sa_mask);
  return ::sigaction(sig, &act, nullptr) == 0;
}

void restore_default(int sig) {
  struct sigaction now {};
  if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == &on_stop_signal)
    std::signal(sig, SIG_DFL);
}

} // namespace

fatal_exit_handlers::fatal_exit_handlers(place_id here) {
  g_here = here;
  std::snprintf(g_term_line.data(), g_term_line.size(), "apgas: place %u: stopped by SIGTERM\n",
                here);
  std::snprintf(g_int_line.data(), g_int_line.size(), "apgas: place %u: stopped by SIGINT\n", here);
  // relaxed: no handler of ours is installed yet.
  g_state.store(k_running, std::memory_order_relaxed);
  m_installed_term = install_if_default(SIGTERM);
  m_installed_int = install_if_default(SIGINT);
  m_previous_terminate = std::set_terminate(&on_terminate);
  g_previous_terminate = m_previous_terminate;
}

fatal_exit_handlers::~fatal_exit_handlers() {
  std::set_terminate(m_previous_terminate);
  if (m_installed_term) restore_default(SIGTERM);
  if (m_installed_int) restore_default(SIGINT);
}

} // namespace apgas::detail
