// The worker loop: run what you have, steal when you have nothing, park when stealing fails.
#include "apgas/detail/scheduler.hpp"

#include "apgas/detail/topology.hpp"

#include <array>
#include <chrono>

namespace apgas::detail {

namespace {
// Items a worker moves from the injection queue to its deque at once after a network poll.
constexpr std::size_t k_injected_batch = 64;
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
    if (m_deferred_end != nullptr && m_deferred_end != f) flush_deferred_ends();
    if (next != 0 && promise_of(next)->m_finish == f) {
      m_deferred_end = f;
      m_deferred_ends += units;
      return promise_of(next)->m_self;
    }
    const std::uint64_t ends = units + std::exchange(m_deferred_ends, 0);
    m_deferred_end = nullptr;
    g_remote_hooks.end_proxy_strands(*f, ends);
    if (next != 0) return promise_of(next)->m_self;
    return std::noop_coroutine();
  }
  if (f->release_strand(units)) {
    const std::coroutine_handle<> then = f->on_complete();
    if (next == 0) return then;
    if (then.address() == std::noop_coroutine().address()) return promise_of(next)->m_self;
    push(make_independent(next)); // already counted: no implicit join any more
    return then;
  }
  if (next != 0) return promise_of(next)->m_self;
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
  if (network* net = m_sched->net(); net != nullptr) (void)net->poll();
}

deque_item worker::steal_from() noexcept {
  // A look at the public part first: a victim with nothing public costs its owner nothing (no
  // write to its lines but, once, the request flag).
  if (!m_deque.has_stealable()) {
    m_deque.want_work();
    return 0;
  }
  if (!m_steal_lock.try_lock()) return 0;
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
  if (n == 0) n = 1;
  m_options.threads = n;
  // Before any worker binds itself: places that share a cpuset with the node's other places
  // spread their workers over it (see topology::set_place_workers).
  topology::instance().set_place_workers(n);
  m_yield_while_spinning = topology::instance().oversubscribed(n);
  if (!m_options.trace.empty()) {
    m_trace = std::make_unique<trace_session>(m_options.trace, n, m_options.trace_events,
                                              std::int64_t{m_options.trace_fold_us} * 1000);
    g_trace = m_trace.get();
    g_trace_on = true; // before the threads start: they see it (thread creation orders it)
  }
  m_workers.reserve(n);
  for (unsigned i = 0; i < n; ++i)
    m_workers.push_back(std::make_unique<worker>(*this, i, n, m_gate));
  m_threads.reserve(n);
  for (unsigned i = 0; i < n; ++i) m_threads.emplace_back([this, i] { worker_main(i); });
}

void scheduler::stop() {
  if (m_threads.empty()) return;
  // release: workers that see the flag see everything before it; the gate wakes parked ones.
  m_stop.store(true, std::memory_order_release);
  m_gate.notify_all();
  for (auto& t : m_threads) t.join();
  m_threads.clear();
  // After the joins: nothing records any more (the network's hooks test the flag too, and
  // whoever tears the places down writes the file after this).
  // Only the scheduler that traces writes the flag: other schedulers of the process (the
  // fake places of a test) run their workers meanwhile, which read it.
  if (m_trace != nullptr && g_trace == m_trace.get()) g_trace_on = false;
}

scheduler::~scheduler() {
  stop();
  if (m_trace != nullptr && g_trace == m_trace.get()) g_trace = nullptr;
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

void scheduler::inject_all(std::span<const deque_item> items) {
  if (items.size() <= 1) {
    if (!items.empty()) inject(items.front());
    return;
  }
  if (worker* w = t_worker; w != nullptr && w->m_between_strands && &w->sched() == this) {
    for (const deque_item item : items) w->push_between_strands(item); // see inject
    return;
  }
  {
    std::lock_guard guard(m_inject_mutex);
    m_injected.insert(m_injected.end(), items.begin(), items.end());
    // relaxed: a hint read without the lock; the mutex orders the queue itself.
    m_injected_count.fetch_add(items.size(), std::memory_order_relaxed);
  }
  // As many sleepers as there are items, up to every worker: each takes a batch (see
  // take_injected_batch) and makes the rest of it stealable.
  const std::size_t wake = std::min<std::size_t>(items.size(), m_workers.size());
  for (std::size_t i = 0; i < wake; ++i) m_gate.notify_one();
}

bool scheduler::work_visible() const {
  // seq_cst loads: the re-check half of the Dekker pattern in idle_gate.hpp (a publisher
  // fences between publishing and reading the sleeper and searcher counts).
  if (m_injected_count.load(std::memory_order_seq_cst) != 0) return true;
  // The caller's own deque, whole (a worker waiting in place that holds private items), and
  // the others' public items only: private ones become public (and wake a sleeper) once
  // their owner answers the requests that the caller's search raised (see deque.hpp).
  if (const worker* self = t_worker;
      self != nullptr && &self->sched() == this && !self->m_deque.owner_sees_empty())
    return true;
  for (const auto& w : m_workers)
    if (w->m_deque.has_stealable_seq_cst()) return true;
  return false;
}

deque_item scheduler::take_injected_batch(worker& self) {
  // relaxed: a stale zero only delays pick-up until the next round (the injector also wakes
  // a parked worker, whose re-check takes the lock).
  if (m_injected_count.load(std::memory_order_relaxed) == 0) return 0;
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
  if (n == 0) return 0;
  self.m_counters.injected += n;
  for (std::size_t i = n - 1; i > 0; --i) self.push(batch[i]);
  self.m_deque.share_all(); // stealable at once: we run the first, the others may be long
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
  if (deque_item item = take_injected_batch(self)) return item;
  // acquire: pairs with set_network's release.
  if (network* net = m_network.load(std::memory_order_acquire); net != nullptr) {
    self.m_between_strands = true; // see scheduler::inject
    const bool delivered = net->poll();
    self.m_between_strands = false;
    if (deque_item item = std::exchange(self.m_handoff, deque_item{0})) return item;
    if (delivered) {
      if (deque_item item = self.m_deque.pop()) return item;
      if (deque_item item = take_injected_batch(self)) return item;
      self.m_served_messages = true; // handlers did all there was to do (see worker_main)
    }
  }
  const auto n = static_cast<unsigned>(m_workers.size());
  if (n < 2) return 0;
  // One round: probe every other worker once, starting at a random one.
  const auto start = static_cast<unsigned>(self.next_random() % n);
  for (unsigned k = 0; k < n; ++k) {
    const unsigned v = (start + k) % n;
    if (v == self.index()) continue;
    ++self.m_counters.steal_attempts;
    worker& victim = *m_workers[v];
    if (deque_item item = victim.steal_from()) {
      ++self.m_counters.steals;
      if (g_trace_on) [[unlikely]] {
        const std::int64_t now = trace_now();
        trace_record(trace_event{now, now, v, 0, 0, 0, trace_kind::steal});
      }
      return item;
    }
  }
  return 0;
}

// One worker thread: find work and run it; out of work, spin a while, then park (the idle
// policy decides when, and who watches the network meanwhile).
void scheduler::worker_main(unsigned index) {
  worker& self = *m_workers[index];
  t_worker = &self;
  t_frame_pool = &self.m_frames;
  if (g_trace_on) t_trace = &m_trace->worker_buffer(index);
  self.set_stack_base(__builtin_frame_address(0));
  if (m_options.pin_workers) topology::instance().bind_this_thread(index);
  idle_policy idle(std::chrono::microseconds(m_options.spin_us), m_yield_while_spinning, m_watch);
  m_gate.begin_search();
  // acquire: pairs with stop()'s release.
  while (!m_stop.load(std::memory_order_acquire)) {
    if (deque_item item = find_work(self)) {
      run(self, idle, item);
      continue;
    }
    if (self.m_served_messages) {
      self.m_served_messages = false;
      idle.served_messages();
    }
    // acquire: pairs with set_network's release.
    network* net = m_network.load(std::memory_order_acquire);
    if (idle.spin_starting()) ran_out_of_work(self, net);
    if (!idle.keep_searching(net)) park(self, idle, net);
  }
  idle.retire();
  m_gate.end_search();
  if (t_trace != nullptr) t_trace->flush_fold();
  t_trace = nullptr;
  t_frame_pool = &g_passthrough_frame_pool;
  t_worker = nullptr;
}

// inline: on the path of every item the search finds (an `at` reply, a steal).
inline void scheduler::run(worker& self, idle_policy& idle, deque_item item) {
  if (idle.found_work()) m_gate.wake_one(); // the watch is handed over before we get busy
  // The last searcher hands the search over before it gets busy (see idle_gate.hpp).
  if (m_gate.end_search()) m_gate.wake_one();
  run_item(self, item);
  m_gate.begin_search();
}

void scheduler::ran_out_of_work(worker& self, network* net) {
  self.m_published.publish(self.m_counters);
  // What we buffered for other places may be what they (and so we) wait for.
  if (net != nullptr) net->flush();
}

void scheduler::park(worker& self, idle_policy& idle, network* net) {
  if (net != nullptr) net->flush(); // nobody else may send our buffered messages soon
  m_gate.end_search();
  const std::uint32_t epoch = m_gate.prepare_park();
  // seq_cst: after the epoch read (see set_network): a network set meanwhile is seen here.
  net = m_network.load(std::memory_order_seq_cst);
  if (m_stop.load(std::memory_order_seq_cst) || work_visible()) {
    m_gate.cancel_park();
    idle.cancelled_park();
  } else {
    ++self.m_counters.parks;
    // A network that needs no polls (a one-place run with nothing buffered) gets no watcher:
    // a send wakes the place (see wake_for_network). Asked after prepare_park: a send that
    // the network does not see here sees us parked.
    const network* to_watch = net != nullptr && net->needs_polls_when_idle() ? net : nullptr;
    const std::int64_t parked_at = g_trace_on ? trace_now() : 0;
    m_gate.park(epoch, idle.park_limit(to_watch));
    if (g_trace_on) [[unlikely]]
      trace_record(trace_event{parked_at, trace_now(), 0, 0, 0, 0, trace_kind::park});
    idle.woke_up();
  }
  m_gate.begin_search();
}

void scheduler::run_item(worker& self, deque_item item) {
  if (g_trace_on) [[unlikely]] {
    run_item_traced(self, item);
    return;
  }
  promise_of(item)->m_self.resume();
  while (auto bounced = self.take_bounced()) bounced.resume();
  // The deque may still hold independent items (see find_work).
}

// run_item with its slice: the item and every activity it spawned inline, counted by the spawns
// the worker made meanwhile (the spawn path itself records nothing).
void scheduler::run_item_traced(worker& self, deque_item item) {
  const std::int64_t start = trace_now();
  const std::uint64_t spawns = self.m_counters.spawns;
  promise_of(item)->m_self.resume();
  while (auto bounced = self.take_bounced()) bounced.resume();
  t_trace->add_activities(start, trace_now(), self.m_counters.spawns - spawns + 1,
                          m_trace->fold_ns());
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
  for (const auto& w : m_workers) {
    out.push_back(w->m_counters);
    out.back().shared = w->m_deque.owner_shared_count();
  }
  return out;
}

} // namespace apgas::detail
