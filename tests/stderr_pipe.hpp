// Tests that read what the process writes to stderr (a state dump, a warning) while it runs.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <stdexcept>
#include <string>

namespace apgas_test {

/// Reads what the process writes to stderr (fd 2) while it lives (up to the pipe's 64 KiB
/// between two reads: a writer waits beyond). Thread-safety: one reader.
class stderr_pipe {
public:
  stderr_pipe() {
    if (::pipe(m_fds) != 0) throw std::runtime_error("pipe");
    ::fcntl(m_fds[0], F_SETFL, O_NONBLOCK);
    m_saved = ::dup(2);
    ::dup2(m_fds[1], 2);
  }
  ~stderr_pipe() {
    ::dup2(m_saved, 2);
    ::close(m_saved);
    ::close(m_fds[0]);
    ::close(m_fds[1]);
  }
  /// Everything written so far, appended to `text`.
  void read_into(std::string& text) {
    char buf[4096];
    for (ssize_t n; (n = ::read(m_fds[0], buf, sizeof buf)) > 0;)
      text.append(buf, static_cast<std::size_t>(n));
  }

private:
  int m_fds[2] = {-1, -1};
  int m_saved = -1;
};

} // namespace apgas_test
