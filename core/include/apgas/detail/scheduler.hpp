// The worker pool of one place: worker threads, their deques, the injection queue through
// which non-worker threads (the main thread, later the message handler) hand in work, and the
// idle gate where workers park.
#pragma once

#include "apgas/detail/activity.hpp"
#include "apgas/detail/idle_gate.hpp"
#include "apgas/detail/idle_policy.hpp"
#include "apgas/detail/network.hpp"
#include "apgas/detail/trace.hpp"
#include "apgas/detail/worker.hpp"
#include "apgas/options.hpp"

#include <atomic>
#include <chrono>
#include <coroutine>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace apgas::detail {

/// @brief Worker pool of one place. Thread-safety: run_root and inject from any thread; the
/// rest is used by workers.
class scheduler {
public:
  explicit scheduler(const options& opts);
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;
  /// Stops the workers (see stop()).
  ~scheduler();

  /// @brief Stops and joins the workers (idempotent). Call only when no activity is running.
  void stop();

  /// @brief Runs `root` as the root activity of a new finish and blocks the calling (non-worker)
  /// thread until it and everything it started have ended.
  /// @throws multiple_exceptions if activities failed.
  void run_root(promise_base& root);

  /// @brief Hands an item to the place from any thread; an idle worker picks it up.
  /// A handler run by one of our workers polling between strands gives it to that worker,
  /// which runs it right after the poll (its handoff slot, then its deque, where others may
  /// steal it): no queue, no lock, on the path of every `at` request and reply and remote
  /// async. The handoff slot's case is inline (a resumed `at` caller takes it).
  void inject(deque_item item) {
    if (worker* w = t_worker;
        w != nullptr && w->m_between_strands && &w->sched() == this && w->m_handoff == 0) {
      w->m_handoff = item; // run as soon as the poll returns
      return;
    }
    inject_other(item);
  }

  /// @brief inject() of several items at once (the activities a clock phase's end wakes): one
  /// lock for all of them, and as many sleepers woken as there are items (up to every worker).
  void inject_all(std::span<const deque_item> items);

  /// @brief Connects the place's message dispatcher: idle workers poll it, and parked workers
  /// wake up now and then to do so (a place with nothing to do still sleeps almost all the
  /// time). pre: called before any activity runs; `net` outlives the workers (stop() first).
  void set_network(network* net) noexcept {
    // seq_cst, then the epoch bump of notify_all: a worker that parks decides whether to
    // watch from a load of m_network made after it read the epoch (see park), so it
    // either sees the network or is woken by the bump.
    m_network.store(net, std::memory_order_seq_cst);
    // Workers that parked before there was a network parked without a time limit (nobody had
    // to watch): wake them, so that one of them becomes the watcher.
    m_gate.notify_all();
  }

  /// @brief Called by the network after something made it need polls (see
  /// network::needs_polls_when_idle): wakes a parked worker unless one is searching (a
  /// searcher polls, and parks only after asking the network again).
  void wake_for_network() noexcept { m_gate.notify_one(); }

  /// @brief The connected message dispatcher, or null (a one-place runtime).
  network* net() const noexcept {
    // acquire: pairs with set_network's release.
    return m_network.load(std::memory_order_acquire);
  }

  /// @brief True while a worker holds the watcher's role (it parks with a time limit to poll
  /// the network). Diagnostics and tests.
  bool watched() const noexcept { return m_watch.taken(); }
  /// @brief The time limit of the watcher's latest park (zero before any). Diagnostics and tests.
  std::chrono::nanoseconds watcher_park_limit() const noexcept { return m_watch.park_limit(); }

  /// @brief True if there is work the calling worker could take now: an item injected, in its
  /// own deque, or public in another's (seq_cst loads: the re-check half of the parking
  /// protocol; elsewhere a hint).
  bool work_visible() const;
  unsigned worker_count() const noexcept { return static_cast<unsigned>(m_workers.size()); }
  const options& opts() const noexcept { return m_options; }
  unsigned parked_workers() const noexcept { return m_gate.sleepers(); }
  /// @brief Each worker's counters. pre: stop() was called (they are read without locks).
  std::vector<worker_counters> counters() const;
  /// @brief The workers' published counters, summed (any thread, while they run; a little
  /// behind the truth). steal_attempts is not published.
  worker_counters published_totals() const;
  /// @brief This place's trace, or null when not tracing (options::trace). Its buffers are
  /// the workers' until stop().
  trace_session* trace() noexcept { return m_trace.get(); }

private:
  void worker_main(unsigned index);
  // The steps of the worker loop.
  deque_item find_work(worker& self);
  void run(worker& self, idle_policy& idle, deque_item item);
  void ran_out_of_work(worker& self, network* net);
  void park(worker& self, idle_policy& idle, network* net);
  void run_item(worker& self, deque_item item);
  void run_item_traced(worker& self, deque_item item);
  /// inject() other than into the calling worker's free handoff slot.
  void inject_other(deque_item item);
  deque_item take_injected_batch(worker& self);

  options m_options;
  /// The node runs more workers than it has cores (topology::oversubscribed): a spinning
  /// worker then yields its core now and then. Otherwise it never does: a yield is a system
  /// call, and the worker that waits for a message sees it that much later.
  bool m_yield_while_spinning = false;
  idle_gate m_gate;
  std::vector<std::unique_ptr<worker>> m_workers;
  std::vector<std::thread> m_threads;

  std::mutex m_inject_mutex; ///< guards m_injected
  std::deque<deque_item> m_injected;
  std::atomic<std::size_t> m_injected_count{0}; ///< lock-free "anything injected?" hint

  std::atomic<bool> m_stop{false};
  std::atomic<network*> m_network{nullptr}; ///< set once before activities run
  watcher_token m_watch;                    ///< a parked worker polls the network (see idle_policy)
  std::vector<std::unique_ptr<finish_state>> m_root_finishes; ///< kept until destruction
  std::unique_ptr<trace_session> m_trace; ///< made before the workers start, if tracing
};

} // namespace apgas::detail
