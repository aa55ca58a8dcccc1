// The slow half of an idle worker's policy: the clock checks of its spin and the watcher's
// back-off (see idle_policy.hpp).
#include "apgas/detail/idle_policy.hpp"

#include <algorithm>

namespace apgas::detail {

bool idle_policy::spin_goes_on(const network* net) noexcept {
  const auto spun = clock::now() - m_spin_start;
  if (spun < m_spin_budget) {
    // Yields only in the second half of the spin: a yield is a system call, and a worker
    // that waits for a message sees it that much later.
    m_yielding = m_yield_when_spinning && spun > m_spin_budget / 2;
    return true;
  }
  if (net != nullptr && spun < k_expecting_spin && net->expecting_messages()) {
    m_yielding = m_yield_when_spinning;
    return true;
  }
  return false;
}

std::chrono::nanoseconds idle_policy::park_limit(const network* to_watch) noexcept {
  // Only a place whose network needs polls has a watcher: a place with nothing to poll for
  // sleeps until something wakes it.
  if (to_watch != nullptr && !m_watcher) {
    m_watcher = m_token->try_take();
  } else if (to_watch == nullptr && m_watcher) {
    drop_watch();
  }
  if (!m_watcher) return std::chrono::nanoseconds::zero();
  if (m_park_backoff == k_min_network_park) m_quiet_since = clock::now();
  if (to_watch->expecting_messages())
    m_park_backoff =
        std::min(m_park_backoff, expecting_cap(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     clock::now() - m_quiet_since)));
  m_token->set_park_limit(m_park_backoff);
  return m_park_backoff;
}

void idle_policy::woke_up() noexcept {
  if (!m_watcher) return;
  m_park_backoff = next_backoff(
      m_park_backoff,
      std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - m_quiet_since));
}

std::chrono::nanoseconds idle_policy::next_backoff(std::chrono::nanoseconds current,
                                                   std::chrono::nanoseconds quiet) noexcept {
  const auto limit = std::clamp(quiet / k_quiet_share, k_max_network_park, k_max_quiet_park);
  return std::min(current * 2, limit);
}

} // namespace apgas::detail
