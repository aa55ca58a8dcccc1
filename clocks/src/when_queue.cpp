// The `when` queue of this place: completing the `when`s whose condition holds, and the
// "suspended whens" section of the place's state dump (a protocol module without messages,
// registered here so that every program that uses atomic or when links it).
#include "apgas/detail/when_queue.hpp"

#include "apgas/detail/call_site.hpp"
#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/protocol_module.hpp"
#include "apgas/detail/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace apgas::detail {

constinit when_queue g_when_queue;

void when_queue::complete_waiters_and_unlock() noexcept {
  // The `when`s done, in queue order: made runnable once the lock is free.
  when_waiter* done = nullptr;
  when_waiter** done_end = &done;
  // A body that runs here may make a condition true that this round tested already: test
  // again until a round completes nothing (each round that completes one shortens the queue).
  for (bool progressed = true; progressed && m_first != nullptr;) {
    progressed = false;
    when_waiter* kept = nullptr; // the last waiter still queued
    for (when_waiter* w = m_first; w != nullptr;) {
      when_waiter* next = w->m_next;
      if (w->m_try_complete(*w)) {
        (kept != nullptr ? kept->m_next : m_first) = next;
        if (m_last == w) m_last = kept;
        --m_waiting;
        w->m_next = nullptr;
        *done_end = w;
        done_end = &w->m_next;
        progressed = true;
      } else {
        kept = w;
      }
      w = next;
    }
  }
  t_holds_atomic_lock = false;
  m_lock.unlock();
  // The done waiters are ours alone now (out of the queue, their activities not resumed).
  // Their link is read before the activity can run and end its frame, where the waiter lives.
  while (done != nullptr) {
    when_waiter* w = done;
    done = w->m_next;
    // A counted strand (suspend_for_external counted what it left behind): an independent
    // item. inject, not our deque: our deque's bottom may be our own parent's continuation.
    w->m_sched->inject(as_independent(w->m_activity));
  }
}

namespace {

/// Holds the lock of a queue for a scope (the lock is already taken).
struct hold {
  atomic_lock& lock;
  ~hold() { lock.unlock(); }
};

bool same_site(const std::source_location& a, const std::source_location& b) noexcept {
  return a.line() == b.line() && a.column() == b.column() &&
         std::strcmp(a.file_name(), b.file_name()) == 0 &&
         std::strcmp(a.function_name(), b.function_name()) == 0;
}

} // namespace

std::string when_queue::describe() const {
  // The dump is for a hung run, which may hang inside a long atomic block: do not join it.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  while (!m_lock.try_lock()) {
    if (std::chrono::steady_clock::now() > give_up)
      return "    (an atomic block holds the place's lock: not listed)\n";
    std::this_thread::yield();
  }
  struct site_count {
    std::source_location site;
    std::size_t count;
  };
  std::vector<site_count> sites;
  std::size_t total = 0;
  {
    const hold guard{m_lock};
    total = m_waiting;
    for (const when_waiter* w = m_first; w != nullptr; w = w->m_next) {
      auto it = std::find_if(sites.begin(), sites.end(),
                             [&](const site_count& s) { return same_site(s.site, w->m_site); });
      if (it != sites.end()) ++it->count;
      else sites.push_back({w->m_site, 1});
    }
  }
  if (total == 0) return {};
  std::string s = fmt::format("    {} suspended, at {} call site(s):\n", total, sites.size());
  for (const site_count& c : sites)
    s += fmt::format("    {} at {}:{} in {}\n", c.count, c.site.file_name(), c.site.line(),
                     readable_function_name(c.site.function_name()));
  return s;
}

std::size_t when_queue::waiting() const {
  m_lock.lock();
  const hold guard{m_lock};
  return m_waiting;
}

namespace {

/// Lists this place's suspended `when`s in the state dump (the queue is the process's).
class suspended_whens final : public protocol_module {
public:
  explicit suspended_whens(message_dispatcher& dispatcher) {
    dispatcher.describes_state_with<&suspended_whens::describe>(*this, "suspended whens");
  }
  std::string describe() const { return g_when_queue.describe(); }
};

} // namespace

APGAS_REGISTER_PROTOCOL_MODULE(suspended_whens, [](message_dispatcher& dispatcher) {
  dispatcher.add_module<suspended_whens>();
});

} // namespace apgas::detail
