// What an idle worker does while it has nothing to run: how long it keeps searching before it
// parks (its spin), whether it yields its core meanwhile, and, on a place with a network,
// which parked worker watches the network (sleeps with a time limit to poll it) and how long
// each of its sleeps lasts. The scheduler's loop asks; the idle gate does the parking.
#pragma once

#include "apgas/detail/network.hpp"
#include "apgas/detail/spin_lock.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace apgas::detail {

/// @brief The watcher's role of one place, a token passed between its workers: at most one
/// parked worker at a time sleeps with a time limit, so that somebody polls the network; the
/// others sleep until woken. Thread-safety: any thread.
class watcher_token {
public:
  /// @brief Takes the role if nobody holds it. @return true if the caller now holds it.
  bool try_take() noexcept {
    // acq_rel: the role is a token passed between workers.
    return !m_taken.exchange(true, std::memory_order_acq_rel);
  }
  /// @brief The holder gives the role up. pre: the caller holds it.
  void release() noexcept {
    // release: pairs with the exchange of the next worker to take the role (try_take).
    m_taken.store(false, std::memory_order_release);
  }
  /// @brief True while a worker holds the role. Diagnostics and tests.
  bool taken() const noexcept {
    // relaxed: a snapshot for observers; the role's hand-overs are ordered among workers.
    return m_taken.load(std::memory_order_relaxed);
  }

  /// @brief The holder records the time limit of its latest park.
  void set_park_limit(std::chrono::nanoseconds limit) noexcept {
    // relaxed: a snapshot for observers (see park_limit).
    m_park_limit_ns.store(limit.count(), std::memory_order_relaxed);
  }
  /// @brief The time limit of the watcher's latest park (zero before any). Diagnostics and tests.
  std::chrono::nanoseconds park_limit() const noexcept {
    // relaxed: a snapshot for observers, written by the watcher alone.
    return std::chrono::nanoseconds(m_park_limit_ns.load(std::memory_order_relaxed));
  }

private:
  std::atomic<bool> m_taken{false};
  std::atomic<std::int64_t> m_park_limit_ns{0};
};

/// @brief One worker's idle policy. After each round of its search for work that found
/// nothing, the worker asks it whether to search again or park, and before parking, how long
/// (whether it watches the network). Thread-safety: owner only (one per worker thread); the
/// watcher_token it refers to is shared by the place's workers.
class idle_policy {
public:
  using clock = std::chrono::steady_clock;

  /// The watcher's shortest and usual longest park: it polls that often while nothing happens.
  static constexpr std::chrono::nanoseconds k_min_network_park = std::chrono::microseconds(20);
  static constexpr std::chrono::nanoseconds k_max_network_park = std::chrono::microseconds(1000);
  /// A place quiet for long wakes up less often still: after at most 1/k_quiet_share of the
  /// time it has been quiet, and k_max_quiet_park at most. A wake-up costs system time (a
  /// timer, more of it after a long sleep), which is what an idle place spends; a message
  /// that ends a long quiet waits a little longer to be seen, but never more than a small
  /// share of the quiet before it.
  static constexpr std::chrono::nanoseconds k_max_quiet_park = std::chrono::microseconds(8000);
  static constexpr int k_quiet_share = 16;
  /// While the place expects messages (network::expecting_messages), an idle worker spins this
  /// long before it parks, and the watcher's parks last no longer than k_expecting_park, or
  /// 1/k_quiet_share of the quiet so far if longer (expecting_cap): the answer to an `at`
  /// typically comes within microseconds, and a place that parks meanwhile makes the next
  /// round trip wait for its wake-up (a sleeping caller and a sleeping callee then take turns,
  /// each round trip costing a park); a long wait (a long remote finish) costs what idling
  /// costs, and sees its message late by a small share of the wait at most.
  static constexpr std::chrono::nanoseconds k_expecting_spin = std::chrono::microseconds(1000);
  static constexpr std::chrono::nanoseconds k_expecting_park = std::chrono::microseconds(100);
  /// Pauses between two rounds of a search on a place without a network.
  static constexpr int k_spin_pauses = 1;
  /// Rounds between two reads of the clock during a spin: a read in every round would lengthen
  /// it, and the length of a round is how late new work or a message is seen.
  static constexpr unsigned k_rounds_per_clock_read = 32;

  /// @param spin how long a worker that ran out of work keeps searching (options::spin_us).
  /// @param yield_when_spinning the node runs more workers than it has cores: a spinning
  ///        worker yields its core in the second half of its spin (and while it spins longer
  ///        for an expected message).
  /// @param token the place's watcher role, shared by its workers.
  idle_policy(std::chrono::microseconds spin, bool yield_when_spinning,
              watcher_token& token) noexcept
      : m_spin_budget(std::chrono::duration_cast<clock::duration>(spin)),
        m_yield_when_spinning(yield_when_spinning), m_token(&token) {}
  idle_policy(const idle_policy&) = delete;
  idle_policy& operator=(const idle_policy&) = delete;

  /// @brief The search found work: the watcher's next park starts from the shortest limit
  /// again, and the next fruitless round starts a new spin. @return true if the worker gave
  /// up the watch: the caller wakes a sleeper to take it over before it gets busy.
  [[nodiscard]] bool found_work() noexcept {
    m_park_backoff = k_min_network_park;
    m_rounds = 0;
    if (!m_watcher) return false;
    drop_watch();
    return true;
  }

  /// @brief The search's network poll ran message handlers that left no work (an `at` of a
  /// plain function runs in its handler). The worker was busy, so it starts a new spin as
  /// after running an item, and a watcher stops watching (it would sleep again at once and
  /// answer the next request late); nobody is woken to take the watch over, since this worker
  /// polls again before it parks.
  void served_messages() noexcept {
    m_park_backoff = k_min_network_park;
    if (m_watcher) drop_watch();
    m_rounds = 0;
  }

  /// @brief True if no round has failed since the worker last ran something (or parked): it
  /// has just run out of work, and its next round starts a spin.
  bool spin_starting() const noexcept { return m_rounds == 0; }

  /// @brief Step "spin": a round of the search found nothing; `net` is the place's network or
  /// null. @return true to search again (after a pause, or a yield), false to park (the search
  /// after the park starts a new spin).
  ///
  /// A watcher that woke up to poll goes back to sleep at once; others keep searching for the
  /// spin budget. Without a network a round ends with a short pause (long pauses make a
  /// message wait); with one, the round's network poll is pause enough, and the length of a
  /// round is how late a message is seen.
  bool keep_searching(const network* net) noexcept {
    if (m_rounds == 0) start_spin();
    ++m_rounds;
    if (!m_watcher && m_spin_budget.count() > 0) {
      if (m_rounds % k_rounds_per_clock_read != 0) {
        if (net == nullptr)
          for (int i = 0; i < k_spin_pauses; ++i) cpu_relax();
        if (m_yielding) std::this_thread::yield();
        return true;
      }
      if (spin_goes_on(net)) return true;
    }
    m_rounds = 0;
    return false;
  }

  /// @brief Step "watch", just before the worker parks: decides whether it watches the
  /// network and returns the park's time limit (zero: none). `to_watch` is the network if it
  /// needs polls while the place is idle (network::needs_polls_when_idle), else null.
  std::chrono::nanoseconds park_limit(const network* to_watch) noexcept;
  /// @brief The park ended (woken or timed out): the watcher's next limit grows.
  void woke_up() noexcept;
  /// @brief The worker's last check before parking found work (or the stop): the watcher
  /// starts again from the shortest limit.
  void cancelled_park() noexcept { m_park_backoff = k_min_network_park; }
  /// @brief The worker stops: it gives the watch up.
  void retire() noexcept {
    if (m_watcher) drop_watch();
  }

  /// @brief True while this worker holds the watcher's role.
  bool watching() const noexcept { return m_watcher; }

  /// @brief The watcher's limit after a park with limit `current` found nothing, the place
  /// having been quiet for `quiet`: doubles up to k_max_network_park, or up to
  /// quiet / k_quiet_share as the quiet lasts, k_max_quiet_park at most.
  /// @brief The longest park of a watcher expecting messages after `quiet` without any.
  static std::chrono::nanoseconds expecting_cap(std::chrono::nanoseconds quiet) noexcept {
    return std::max(k_expecting_park, quiet / k_quiet_share);
  }
  static std::chrono::nanoseconds next_backoff(std::chrono::nanoseconds current,
                                               std::chrono::nanoseconds quiet) noexcept;

private:
  void start_spin() noexcept {
    m_spin_start = clock::now();
    m_yielding = false;
  }
  /// Every k_rounds_per_clock_read rounds: whether the spin goes on, and with yields or not.
  bool spin_goes_on(const network* net) noexcept;
  void drop_watch() noexcept {
    m_watcher = false;
    m_token->release();
  }

  clock::duration m_spin_budget;
  bool m_yield_when_spinning;
  watcher_token* m_token;
  unsigned m_rounds = 0;          ///< fruitless rounds of the current spin; 0: none yet
  clock::time_point m_spin_start; ///< when the current spin began
  bool m_yielding = false;        ///< the current spin yields the core after each round
  bool m_watcher = false;         ///< this worker holds the watcher's role
  std::chrono::nanoseconds m_park_backoff = k_min_network_park; ///< the watcher's next limit
  /// When the watcher's current run of fruitless wake-ups began (its first park with the
  /// shortest limit).
  clock::time_point m_quiet_since{};
};

} // namespace apgas::detail
