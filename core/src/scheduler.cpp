// The worker loop: run what you have, steal when you have nothing, park when stealing fails.
#include "apgas/detail/scheduler.hpp"

#include "apgas/detail/topology.hpp"

#include <algorithm>
#include <array>
#include <chrono>

namespace apgas::detail {

namespace {
// Parked workers of a place with a network wake up after at most this long to poll it.
constexpr std::chrono::nanoseconds k_min_network_park = std::chrono::microseconds(20);
constexpr std::chrono::nanoseconds k_max_network_park = std::chrono::microseconds(1000);
// A place quiet for long wakes up less often still: after at most 1/k_quiet_share of the time
// it has been quiet, and k_max_quiet_park at most (from 16 ms of quiet on). A wake-up costs
// ~20 us of system time here (a timer in a VM), more after a long sleep: at 1 ms an idle place
// used ~2.5 % of a core, at 8 ms ~1 % (bench_idle). A message that ends a long quiet waits a
// little longer to be seen, but never more than 1/16 of the quiet before it.
constexpr std::chrono::nanoseconds k_max_quiet_park = std::chrono::microseconds(8000);
constexpr int k_quiet_share = 16;
// While the place expects messages (network::expecting_messages), an idle worker spins this
// long before it parks, and the watcher's waits grow no longer than k_expecting_park: the
// answer to an `at` typically comes within microseconds, and a place that parks meanwhile
// makes the next round trip wait for its wake-up (a sleeping caller and a sleeping callee
// then take turns, each round trip costing a park).
constexpr std::chrono::nanoseconds k_expecting_spin = std::chrono::microseconds(1000);
constexpr std::chrono::nanoseconds k_expecting_park = std::chrono::microseconds(100);
// Items a worker moves from the injection queue to its deque at once after a network poll.
constexpr std::size_t k_injected_batch = 64;
// Pauses between two rounds of an idle worker's search.
constexpr int k_spin_pauses = 1;
} // namespace

// ---- worker: the slow paths of the strand protocol ------------------------------------------

std::coroutine_handle<> worker::end_strand(finish_state* f, deque_item next,
                                           bool was_work_first_child,
                                           std::uint32_t units) noexcept {
  if (next != 0 && is_continuation(next)) {
    // We took a continuation that its child will not join: it now runs as a strand of its
    // own. relaxed: sequenced before our release-decrement below, which orders it before any
    // decrement of that finish that could follow from ours.
    promise_of(next)->m_finish->m_count.fetch_add(1, std::memory_order_relaxed);
  } else if (next == 0 && was_work_first_child) {
    // Our parent's continuation was stolen. The thief counts it while holding our steal lock;
    // passing through the lock makes sure that increment precedes our decrement.
    m_steal_lock.lock();
    m_steal_lock.unlock();
  }
  if (f->m_reopenable) {
    // A proxy's strand (an activity that came from another place). Its end costs the proxy's
    // lock and an atomic decrement; a stream of remote asyncs ends thousands in a row on one
    // worker. So while the next item runs for the same proxy, the end is put off and added
    // to that item's own end: the count stays above the truth meanwhile (never an early
    // report), and the put-off ends are applied when the chain turns to other work, at the
    // latest when this worker looks for work (flush_deferred_ends).
    if (m_deferred_end != nullptr && m_deferred_end != f)
      flush_deferred_ends();
    if (next != 0 && promise_of(next)->m_finish == f) {
      m_deferred_end = f;
      m_deferred_ends += units;
      return promise_of(next)->m_self;
    }
    const std::uint64_t ends = units + std::exchange(m_deferred_ends, 0);
    m_deferred_end = nullptr;
    g_remote_hooks.end_proxy_strands(*f, ends);
    if (next != 0)
      return promise_of(next)->m_self;
    return std::noop_coroutine();
  }
  if (f->release_strand(units)) {
    const std::coroutine_handle<> then = f->on_complete();
    if (next == 0)
      return then;
    if (then.address() == std::noop_coroutine().address())
      return promise_of(next)->m_self;
    push(make_independent(next)); // already counted: no implicit join any more
    return then;
  }
  if (next != 0)
    return promise_of(next)->m_self;
  return std::noop_coroutine();
}

std::coroutine_handle<> worker::suspend_for_external() noexcept {
  // An empty deque (a worker awaiting an `at` with nothing else to do, the latency case) is
  // seen without pop()'s fence: owner_sees_empty() never says empty when an item is there.
  const deque_item next = m_deque.owner_sees_empty() ? 0 : m_deque.pop();
  if (next == 0) {
    // A continuation of ours may have been stolen: its thief counts it under our lock.
    m_steal_lock.lock();
    m_steal_lock.unlock();
    return std::noop_coroutine();
  }
  if (is_continuation(next)) {
    // relaxed: the caller's publication of the suspension (a message send, a lock release)
    // comes after this increment and orders it before anything the resumed activity does.
    promise_of(next)->m_finish->m_count.fetch_add(1, std::memory_order_relaxed);
  }
  return transfer(promise_of(next)->m_self);
}

void worker::busy_poll() noexcept {
  m_pushes_until_poll = k_busy_poll_pushes;
  m_published.publish(m_counters);
  // Message handlers only inject work and update finish state: safe from inside a spawn.
  // poll() try-locks the transport, so a busy worker never waits for another poller.
  if (network* net = m_sched->net(); net != nullptr)
    (void)net->poll();
}

deque_item worker::steal_from() noexcept {
  if (!m_steal_lock.try_lock())
    return 0;
  const deque_item item = m_deque.steal();
  if (item != 0 && is_continuation(item)) {
    // A stolen continuation is a new strand of its finish. relaxed: the victim's strand keeps
    // the count above zero until it passes through our lock (see end_strand).
    promise_of(item)->m_finish->m_count.fetch_add(1, std::memory_order_relaxed);
  }
  m_steal_lock.unlock();
  return item;
}

// ---- scheduler ------------------------------------------------------------------------------

scheduler::scheduler(const options& opts) : m_options(opts) {
  unsigned n = m_options.threads != 0 ? m_options.threads : topology::instance().pu_count();
  if (n == 0)
    n = 1;
  m_options.threads = n;
  // Before any worker binds itself: places that share a cpuset with the node's other places
  // spread their workers over it (see topology::set_place_workers).
  topology::instance().set_place_workers(n);
  m_yield_while_spinning = topology::instance().oversubscribed(n);
  m_workers.reserve(n);
  for (unsigned i = 0; i < n; ++i)
    m_workers.push_back(std::make_unique<worker>(*this, i, m_gate));
  m_threads.reserve(n);
  for (unsigned i = 0; i < n; ++i)
    m_threads.emplace_back([this, i] { worker_main(i); });
}

scheduler::~scheduler() {
  stop();
}

void scheduler::stop() {
  if (m_threads.empty())
    return;
  // release: workers that see the flag see everything before it; the gate wakes parked ones.
  m_stop.store(true, std::memory_order_release);
  m_gate.notify_all();
  for (auto& t : m_threads)
    t.join();
  m_threads.clear();
}

void scheduler::run_root(promise_base& root) {
  auto state = std::make_unique<finish_state>(m_options.default_policy);
  finish_state& f = *state;
  m_root_finishes.push_back(std::move(state));
  root.m_finish = &f;
  root.m_role = promise_base::role::strand;
  root.m_parent = nullptr;
  inject(as_independent(&root));
  // The calling thread is not a worker: it may block. acquire: pairs with on_complete().
  f.m_done.wait(false, std::memory_order_acquire);
  f.rethrow_if_failed();
}

void scheduler::inject_other(deque_item item) {
  // A handler run by one of our workers polling between strands, whose handoff slot is taken:
  // the item goes to that worker's deque (see inject).
  if (worker* w = t_worker; w != nullptr && w->m_between_strands && &w->sched() == this) {
    w->push_between_strands(item);
    return;
  }
  {
    std::lock_guard guard(m_inject_mutex);
    m_injected.push_back(item);
    // relaxed: a hint read without the lock; the mutex orders the queue itself.
    m_injected_count.fetch_add(1, std::memory_order_relaxed);
  }
  m_gate.notify_one();
}

bool scheduler::work_visible() const {
  // seq_cst loads: the re-check half of the Dekker pattern in idle_gate.hpp (a publisher
  // fences between publishing and reading the sleeper and searcher counts).
  if (m_injected_count.load(std::memory_order_seq_cst) != 0)
    return true;
  for (const auto& w : m_workers)
    if (!w->m_deque.looks_empty_seq_cst())
      return true;
  return false;
}

deque_item scheduler::take_injected_batch(worker& self) {
  // relaxed: a stale zero only delays pick-up until the next round (the injector also wakes
  // a parked worker, whose re-check takes the lock).
  if (m_injected_count.load(std::memory_order_relaxed) == 0)
    return 0;
  // Message handlers inject the work they create, often many activities at once (one
  // coalesced buffer): take a batch under one lock, run one, and make the rest stealable from
  // our deque (empty here: we are between strands, so independent items may go there).
  std::array<deque_item, k_injected_batch> batch;
  std::size_t n = 0;
  {
    std::lock_guard guard(m_inject_mutex);
    while (n < batch.size() && !m_injected.empty()) {
      batch[n++] = m_injected.front();
      m_injected.pop_front();
    }
    m_injected_count.fetch_sub(n, std::memory_order_relaxed); // relaxed: see inject()
  }
  if (n == 0)
    return 0;
  self.m_counters.injected += n;
  for (std::size_t i = n - 1; i > 0; --i)
    self.push(batch[i]);
  return batch[0];
}

deque_item scheduler::find_work(worker& self) {
  self.flush_deferred_ends(); // the chain of strands that put them off has ended
  // Our own deque first: work that message handlers or an injected batch put there may still
  // be in it when a chain of strands ends without popping (the last strand of a root finish
  // leaves the deque alone). Taking the bottom item is what suspend_for_external does: a
  // continuation whose child will not join it becomes a strand of its own.
  if (deque_item item = self.m_deque.owner_sees_empty() ? 0 : self.m_deque.pop()) {
    // relaxed: as in suspend_for_external (what runs it next orders it before its decrement).
    if (is_continuation(item))
      promise_of(item)->m_finish->m_count.fetch_add(1, std::memory_order_relaxed);
    return item;
  }
  if (deque_item item = take_injected_batch(self))
    return item;
  // acquire: pairs with set_network's release.
  if (network* net = m_network.load(std::memory_order_acquire); net != nullptr) {
    self.m_between_strands = true; // see scheduler::inject
    const bool delivered = net->poll();
    self.m_between_strands = false;
    if (deque_item item = std::exchange(self.m_handoff, deque_item{0}))
      return item;
    if (delivered) {
      if (deque_item item = self.m_deque.pop())
        return item;
      if (deque_item item = take_injected_batch(self))
        return item;
      self.m_served_messages = true; // handlers did all there was to do (see worker_main)
    }
  }
  const auto n = static_cast<unsigned>(m_workers.size());
  if (n < 2)
    return 0;
  // One round: probe every other worker once, starting at a random one.
  const auto start = static_cast<unsigned>(self.next_random() % n);
  for (unsigned k = 0; k < n; ++k) {
    const unsigned v = (start + k) % n;
    if (v == self.index())
      continue;
    ++self.m_counters.steal_attempts;
    worker& victim = *m_workers[v];
    if (deque_item item = victim.steal_from()) {
      ++self.m_counters.steals;
      return item;
    }
  }
  return 0;
}

void scheduler::worker_main(unsigned index) {
  worker& self = *m_workers[index];
  t_worker = &self;
  t_frame_pool = &self.m_frames;
  self.set_stack_base(__builtin_frame_address(0));
  if (m_options.pin_workers)
    topology::instance().bind_this_thread(index);
  m_gate.begin_search();
  unsigned idle_rounds = 0;
  using spin_clock = std::chrono::steady_clock;
  const auto spin_budget = std::chrono::duration_cast<spin_clock::duration>(
      std::chrono::microseconds(m_options.spin_us));
  spin_clock::time_point spin_start;
  bool yielding = false;
  // With a network, one parked worker at a time (the watcher) sleeps with a time limit so
  // that somebody polls for messages; the others sleep until woken.
  bool watcher = false;
  std::chrono::nanoseconds park_backoff = k_min_network_park;
  // When the watcher's current run of fruitless wake-ups began (its first park with the
  // shortest limit); the epoch: not watching.
  spin_clock::time_point quiet_since{};
  // acquire: pairs with stop()'s release.
  while (!m_stop.load(std::memory_order_acquire)) {
    if (deque_item item = find_work(self)) {
      park_backoff = k_min_network_park;
      if (watcher) { // hand the watch over before getting busy
        watcher = false;
        m_watcher_taken.store(false, std::memory_order_release);
        m_gate.wake_one();
      }
      // The last searcher hands the search over before it gets busy (see idle_gate.hpp).
      if (m_gate.end_search())
        m_gate.wake_one();
      run_item(self, item);
      m_gate.begin_search();
      idle_rounds = 0;
      continue;
    }
    if (self.m_served_messages) {
      // Handlers ran and left no work (an `at` of a plain function runs in its handler): this
      // worker was busy, so it starts a new spin like after running an item, and a watcher
      // stops watching (it would sleep again at once and answer the next request late).
      self.m_served_messages = false;
      park_backoff = k_min_network_park;
      if (watcher) {
        watcher = false;
        m_watcher_taken.store(false, std::memory_order_release); // see the exchange below
      }
      idle_rounds = 0;
    }
    network* net = m_network.load(std::memory_order_acquire);
    if (idle_rounds == 0) {
      self.m_published.publish(self.m_counters);
      // Out of work: what we buffered for other places may be what they (and so we) wait for.
      if (net != nullptr)
        net->flush();
      spin_start = spin_clock::now();
      yielding = false;
    }
    // A watcher that woke up to poll goes back to sleep at once; others keep looking for a
    // while (spin_us): a round is a steal attempt on every worker and a network poll, with a
    // short pause between rounds (one pause is ~30 ns here: long pauses make a message wait)
    // when there is no network: a network poll (~150 ns, most of it MPI's progress) is pause
    // enough, and the length of a round is how late a message is seen.
    // In the second half of the spin a round also yields the CPU if the node is oversubscribed.
    // The clock (~25 ns here) is read every 32 rounds only.
    ++idle_rounds;
    if (!watcher && spin_budget.count() > 0) {
      if ((idle_rounds & 31U) != 0) {
        if (net == nullptr)
          for (int i = 0; i < k_spin_pauses; ++i)
            cpu_relax();
        if (yielding)
          std::this_thread::yield();
        continue;
      }
      const auto spun = spin_clock::now() - spin_start;
      if (spun < spin_budget) {
        yielding = m_yield_while_spinning && spun > spin_budget / 2;
        continue;
      }
      if (net != nullptr && spun < k_expecting_spin && net->expecting_messages()) {
        yielding = m_yield_while_spinning;
        continue;
      }
    }
    idle_rounds = 0;
    if (net != nullptr)
      net->flush(); // nobody else may send our buffered messages soon
    m_gate.end_search();
    const std::uint32_t epoch = m_gate.prepare_park();
    // seq_cst: after the epoch read (see set_network): a network set meanwhile is seen here.
    net = m_network.load(std::memory_order_seq_cst);
    if (m_stop.load(std::memory_order_seq_cst) || work_visible()) {
      m_gate.cancel_park();
      park_backoff = k_min_network_park;
    } else {
      ++self.m_counters.parks;
      // Only a place whose network needs polls has a watcher: a one-place run with nothing
      // buffered sleeps until something wakes it (a send does, see wake_for_network). Asked
      // after prepare_park: a send that the network does not see here sees us parked.
      const bool needs_polls = net != nullptr && net->needs_polls_when_idle();
      // acq_rel: the role is a token passed between workers.
      if (needs_polls && !watcher) {
        watcher = !m_watcher_taken.exchange(true, std::memory_order_acq_rel);
      } else if (!needs_polls && watcher) {
        watcher = false;
        m_watcher_taken.store(false, std::memory_order_release);
      }
      // The watcher's limit doubles while nothing happens, up to 1 ms, then 8 ms as the quiet
      // lasts (see k_max_quiet_park); 100 us at most while a message is expected.
      if (watcher && net->expecting_messages())
        park_backoff = std::min(park_backoff, k_expecting_park);
      if (watcher) {
        if (park_backoff == k_min_network_park)
          quiet_since = spin_clock::now();
        // relaxed: a snapshot for observers (see watcher_park_limit).
        m_watcher_park_limit_ns.store(park_backoff.count(), std::memory_order_relaxed);
      }
      m_gate.park(epoch, watcher ? park_backoff : std::chrono::nanoseconds::zero());
      if (watcher) {
        const auto quiet =
            std::chrono::duration_cast<std::chrono::nanoseconds>(spin_clock::now() - quiet_since);
        const auto limit = std::clamp(quiet / k_quiet_share, k_max_network_park, k_max_quiet_park);
        park_backoff = std::min(park_backoff * 2, limit);
      }
    }
    m_gate.begin_search();
  }
  if (watcher)
    m_watcher_taken.store(false, std::memory_order_release);
  m_gate.end_search();
  t_frame_pool = &g_passthrough_frame_pool;
  t_worker = nullptr;
}

void scheduler::run_item(worker& self, deque_item item) {
  promise_of(item)->m_self.resume();
  while (auto bounced = self.take_bounced())
    bounced.resume();
  // The deque may still hold independent items (see find_work).
}

worker_counters scheduler::published_totals() const {
  worker_counters total;
  for (const auto& w : m_workers) {
    // relaxed: see published_counters.
    total.spawns += w->m_published.spawns.load(std::memory_order_relaxed);
    total.steals += w->m_published.steals.load(std::memory_order_relaxed);
    total.parks += w->m_published.parks.load(std::memory_order_relaxed);
    total.injected += w->m_published.injected.load(std::memory_order_relaxed);
  }
  return total;
}

std::vector<worker_counters> scheduler::counters() const {
  std::vector<worker_counters> out;
  out.reserve(m_workers.size());
  for (const auto& w : m_workers)
    out.push_back(w->m_counters);
  return out;
}

} // namespace apgas::detail
