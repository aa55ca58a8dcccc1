// A clock registration's operations (see <apgas/clock.hpp>): each checks the registration,
// then acts on the clock's state at this place (clock_proxy) under that clock's own lock.
#include "apgas/clock.hpp"

#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/worker.hpp"
#include "apgas/remote_exceptions.hpp"

#include "clock_protocol.hpp"
#include "clock_proxy.hpp"

#include <chrono>
#include <utility>

// Misuse at another place reaches its caller or finish as itself (here: every program that
// makes a clock links this file).
APGAS_REGISTER_EXCEPTION(apgas::clock_use_exception);

namespace apgas {

namespace detail {

clock make_clock_awaiter::await_resume() {
  clock_proxy& px = clock_protocol::current().make_clock(m_signal);
  px.register_maker();
  clock c;
  c.m_proxy = &px; // make_clock retained it once, for this registration
  c.m_phase = 1;
  c.m_signal = m_signal;
  c.m_finish = m_finish;
  return c;
}

clock adopt_clock_awaiter::await_resume() {
  clock_proxy& px = clock_protocol::current().adopt(m_token); // retained for this registration
  px.register_adopted(m_token.phase);
  clock c;
  c.m_proxy = &px;
  c.m_phase = m_token.phase;
  c.m_signal = m_token.default_signal;
  c.m_finish = m_finish;
  return c;
}

} // namespace detail

detail::make_clock_awaiter clock::make(signal s) { return detail::make_clock_awaiter(s); }

clock::clock(clock&& other) noexcept
    : m_proxy(std::exchange(other.m_proxy, nullptr)), m_phase(other.m_phase),
      m_resumed(other.m_resumed), m_signal(other.m_signal), m_finish(other.m_finish) {}

clock& clock::operator=(clock&& other) noexcept {
  if (this != &other) {
    drop();
    m_proxy = std::exchange(other.m_proxy, nullptr);
    m_phase = other.m_phase;
    m_resumed = other.m_resumed;
    m_signal = other.m_signal;
    m_finish = other.m_finish;
  }
  return *this;
}

clock::~clock() { drop(); }

void clock::check_registered(const char* operation) const {
  if (m_proxy == nullptr) [[unlikely]]
    throw clock_use_exception(std::string("apgas: ") + operation +
                              " on a dropped clock (this activity is not registered on it)");
}

std::uint64_t clock::phase() const noexcept {
  if (m_proxy != nullptr && m_resumed && m_proxy->ended(m_phase)) return m_phase + 1;
  return m_phase;
}

void clock::resume() {
  check_registered("resume()");
  m_proxy->resume(m_phase, m_resumed, nullptr);
}

detail::advance_awaiter<void> clock::advance() { return advance(m_signal); }

detail::advance_awaiter<void> clock::advance(signal s) {
  return detail::advance_awaiter<void>(*this, s);
}

void clock::drop() noexcept {
  if (m_proxy == nullptr) return;
  detail::clock_proxy* px = std::exchange(m_proxy, nullptr);
  px->drop(m_phase, m_resumed);
  px->release();
}

clock clock::register_child(const detail::finish_state* spawner) {
  check_registered("a clocked async");
  if (m_finish != nullptr && spawner != m_finish)
    throw clock_use_exception("apgas: a clocked async inside a finish nested in the activity "
                              "registered on the clock: the finish would wait for the child, "
                              "and the child for the activity's next phase (deadlock)");
  m_proxy->check_transmit(m_phase, m_resumed);
  m_proxy->register_child(m_phase);
  m_proxy->retain();
  clock child;
  child.m_proxy = m_proxy;
  child.m_phase = m_phase;
  child.m_signal = m_signal;
  child.m_finish = spawner;
  return child;
}

detail::clock_token clock::register_remote_child(const detail::finish_state* spawner, place_id to) {
  check_registered("a clocked async_at");
  if (m_finish != nullptr && spawner != m_finish)
    throw clock_use_exception("apgas: a clocked async_at inside a finish nested in the "
                              "activity registered on the clock: the finish would wait for the "
                              "child, and the child for the activity's next phase (deadlock)");
  m_proxy->check_transmit(m_phase, m_resumed);
  return m_proxy->register_remote(m_phase, to);
}

void clock::unregister_remote_child(place_id to) noexcept {
  m_proxy->unregister_remote(m_phase, to);
}

// ---- advance ---------------------------------------------------------------------------------

bool clock::begin_advance(const detail::reduce_contribution* c, signal s) {
  check_registered("advance()");
  m_proxy->resume(m_phase, m_resumed, c);
  if (m_proxy->ended(m_phase)) return true;
  if (s == signal::eager) {
    // Keep this worker a while, re-checking the phase and polling the network (the phase's
    // end may be a message); suspend once the wait has lasted --spin-us, or as soon as the
    // place has other work: an activity that this worker could run instead may be one the
    // phase waits for.
    detail::worker& w = *detail::t_worker;
    using spin_clock = std::chrono::steady_clock;
    const auto budget = std::chrono::microseconds(w.sched().opts().spin_us);
    const auto start = spin_clock::now();
    detail::network* net = w.sched().net();
    for (unsigned round = 1;; ++round) {
      if (m_proxy->ended(m_phase)) return true;
      // A poll is pause enough (the phase's end may be one of the messages it delivers).
      if (net != nullptr) (void)net->poll();
      else detail::cpu_relax();
      if ((round & 15U) != 0) continue;
      if (w.sched().work_visible()) return false;
      if (spin_clock::now() - start > budget) return m_proxy->ended(m_phase);
    }
  }
  return false;
}

std::coroutine_handle<> clock::suspend_advance(detail::clock_waiter& w) {
  detail::clock_protocol& module = m_proxy->module();
  module.counters().advances_waited.fetch_add(1, std::memory_order_relaxed); // a statistic
  // What this worker runs next is decided before the activity is published: once it is
  // queued, the phase's end may resume it at once on another worker.
  const std::coroutine_handle<> next = detail::t_worker->suspend_for_external();
  if (!m_proxy->wait(m_phase, w)) module.sched().inject(detail::as_independent(w.activity));
  return next;
}

void clock::end_advance(void* result, std::size_t size) {
  if (result != nullptr) {
    const detail::clock_partial& r = m_proxy->result_of(m_phase);
    if (r.size != size)
      throw clock_use_exception("apgas: the contributions to a clock phase's reduction use "
                                "different types");
    std::memcpy(result, r.value.data(), size);
  }
  ++m_phase; // the phase ended: the registration is in the next one, not resumed there
  m_resumed = false;
}

} // namespace apgas
