// One-sided get and put (see <apgas/global_ptr.hpp>): how an access waits for the network.
#include "apgas/global_ptr.hpp"

#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/worker.hpp"

#include <fmt/format.h>

namespace apgas::detail {

rma_network& current_rma() {
  rma_network* net = message_dispatcher::current().net().rma();
  if (net == nullptr) [[unlikely]]
    throw std::logic_error("apgas: this network has no one-sided access (MPI or one place)");
  return *net;
}

void check_access(place_id where, std::uintptr_t address, std::size_t bytes) {
  (void)bytes;
  if (address == 0) throw std::invalid_argument("apgas: rget/rput through a null global_ptr");
  if (where >= apgas::places())
    throw std::out_of_range(fmt::format("apgas: a global_ptr to place {} (places are 0 to {})",
                                        where, apgas::places() - 1));
}

void attach_memory(void* base, std::size_t bytes) { current_rma().attach(base, bytes); }

void detach_memory(void* base) noexcept {
  // Memory that outlives its runtime has nothing left to detach from.
  if (message_dispatcher* dispatcher = message_dispatcher::current_or_null())
    if (rma_network* net = dispatcher->net().rma()) net->detach(base);
}

bool rma_waiter::start_at_once() {
  try {
    rma_network& net = current_rma();
    if (m_put) net.start_put(m_target, m_address, m_local, m_bytes, *this);
    else net.start_get(m_target, m_address, m_local, m_bytes, *this);
  } catch (...) {
    m_error = std::current_exception();
    return true;
  }
  // acquire: done()'s m_error, when the start completed the access.
  return m_state.load(std::memory_order_acquire) == k_done;
}

std::coroutine_handle<> rma_waiter::suspend(promise_base& activity) {
  m_activity = &activity;
  // What this worker runs next is decided before the access can resume the activity (on
  // another thread's poll, which then makes it runnable).
  worker& w = *t_worker;
  if (g_trace_on) [[unlikely]]
    m_wait.begin(); // before the exchange below publishes the activity
  const std::coroutine_handle<> next = w.suspend_for_external();
  message_dispatcher& dispatcher = message_dispatcher::current();
  dispatcher.expect_message(); // idle workers poll eagerly meanwhile
  std::uint8_t started = k_started;
  // acq_rel: publishes m_activity to done(); if done() came first, acquires its m_error.
  if (!m_state.compare_exchange_strong(started, k_waiting, std::memory_order_acq_rel)) {
    dispatcher.expected_message_arrived(); // done meanwhile, on another thread's poll
    w.sched().inject(as_independent(&activity));
  }
  return next;
}

void rma_waiter::done(std::exception_ptr error) noexcept {
  m_error = std::move(error);
  // acq_rel: publishes m_error to the activity; if it waits, acquires m_activity.
  if (m_state.exchange(k_done, std::memory_order_acq_rel) != k_waiting) return;
  message_dispatcher& dispatcher = message_dispatcher::current();
  dispatcher.expected_message_arrived();
  dispatcher.sched().inject(as_independent(m_activity));
}

} // namespace apgas::detail
