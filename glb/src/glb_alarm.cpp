// The checkpoint coordinator's alarm (see apgas/detail/glb_alarm.hpp).
#include "apgas/detail/glb_alarm.hpp"

#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/scheduler.hpp"

namespace apgas::detail::glb {

std::coroutine_handle<> alarm::awaiter::suspend(promise_base& p) noexcept {
  alarm& a = m_alarm;
  // Counted as suspended before anybody can resume it.
  const std::coroutine_handle<> next = t_worker->suspend_for_external();
  // relaxed: published by the store of m_sleeper below.
  a.m_due_ns.store(m_due.time_since_epoch().count(), std::memory_order_relaxed);
  // seq_cst, as m_woken's store and load: a sleeper and a wake() that cross see each other
  // (at least one of the two loads sees the other's store); the exchange gives the sleeper
  // to one of them only.
  a.m_sleeper.store(&p, std::memory_order_seq_cst);
  // Due already or not, the sleeper waits for a tick: the module's tick freezes the place
  // before it resumes the sleeper, which must find a free worker (see glb_checkpoint.hpp).
  if (a.m_woken.load(std::memory_order_seq_cst))
    (void)a.resume(a.m_sleeper.exchange(nullptr, std::memory_order_acq_rel));
  return next;
}

void alarm::wake() noexcept {
  m_woken.store(true, std::memory_order_seq_cst); // see awaiter::suspend
  resume(m_sleeper.exchange(nullptr, std::memory_order_seq_cst));
}

void alarm::arm() noexcept {
  // relaxed: arm() runs before the run's coordinator sleeps, in the same activity.
  m_woken.store(false, std::memory_order_relaxed);
}

bool alarm::fire_if_due() noexcept {
  // acquire: pairs with the sleeper's store, which published its time.
  if (m_sleeper.load(std::memory_order_acquire) == nullptr) return false; // the common case
  const std::int64_t now = clock::now().time_since_epoch().count();
  if (now < m_due_ns.load(std::memory_order_relaxed)) return false;
  return resume(m_sleeper.exchange(nullptr, std::memory_order_acq_rel));
}

bool alarm::resume(promise_base* sleeper) noexcept {
  if (sleeper == nullptr) return false;
  m_dispatcher.sched().inject(as_independent(sleeper));
  return true;
}

} // namespace apgas::detail::glb
