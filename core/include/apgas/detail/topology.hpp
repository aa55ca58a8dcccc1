// The machine as this process sees it (hwloc behind this one interface): how many processing
// units the process may run on, and binding a thread to one of them.
#pragma once

#include <string>

namespace apgas::detail {

/// @brief Processing units of the calling process's cpuset. Thread-safety: any thread.
class topology {
public:
  /// @brief The process-wide instance (hwloc topology loaded on first use).
  static topology& instance();
  /// @brief Number of PUs in the process's cpuset (at least 1).
  unsigned pu_count() const noexcept { return m_pus; }
  /// @brief Binds the calling thread to the (index mod pu_count)-th PU of the cpuset.
  /// @return false if binding is not supported (the thread then runs unbound).
  bool bind_this_thread(unsigned index) const;
  /// @brief One line: the PUs of the cpuset, for diagnostics.
  std::string describe() const;

  topology(const topology&) = delete;
  topology& operator=(const topology&) = delete;
  ~topology();

private:
  topology();
  struct impl;
  impl* m_impl;
  unsigned m_pus = 1;
};

} // namespace apgas::detail
