// A clock registration's operations (see <apgas/clock.hpp>): each checks the registration,
// then acts on the clock's state at this place (clock_proxy) under that clock's own lock.
//
// A registration is X10's view of the clock from its activity: a phase, and whether the
// activity has resumed in it. Only advance moves it to the next phase. The proxy counts it
// where the clock's phases need it: in its phase while it has not resumed, and once that phase
// has ended, in the next one (where it has not resumed yet).
#include "apgas/clock.hpp"

#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/when_queue.hpp"
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
  // Phases count up from here without wrapping (2^63 leaves room for any run's advances).
  if (m_first_phase == 0 || m_first_phase > (std::uint64_t{1} << 63)) [[unlikely]]
    throw clock_use_exception("apgas: clock::make(s, first_phase) with first_phase " +
                              std::to_string(m_first_phase) + ": phases count from 1 to 2^63");
  clock_proxy& px = clock_protocol::current().make_clock(m_signal, m_first_phase);
  px.register_maker();
  clock c;
  c.m_proxy = &px; // make_clock retained it once, for this registration
  c.m_phase = m_first_phase;
  c.m_signal = m_signal;
  c.m_finish = m_finish;
  c.m_owner.store(&activity_of(*m_frame), std::memory_order_relaxed);
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
  c.m_owner.store(&activity_of(*m_frame), std::memory_order_relaxed);
  return c;
}

namespace {
/// Clock operations inside an atomic block or `when` would hold the place's lock across a
/// phase (X10 refuses them too).
void check_not_in_atomic(const char* operation) {
  if (in_atomic_block()) [[unlikely]]
    throw clock_use_exception(std::string("apgas: ") + operation +
                              " inside an atomic block or when: it would hold the place's "
                              "lock while the phase waits for other activities");
}
} // namespace

} // namespace detail

detail::make_clock_awaiter clock::make(signal s) { return detail::make_clock_awaiter(s, 1); }
detail::make_clock_awaiter clock::make(signal s, std::uint64_t first_phase) {
  return detail::make_clock_awaiter(s, first_phase);
}

clock::clock(clock&& other) noexcept
    : m_proxy(std::exchange(other.m_proxy, nullptr)), m_phase(other.m_phase),
      m_resumed(other.m_resumed), m_signal(other.m_signal), m_finish(other.m_finish),
      m_owner(other.m_owner.load(std::memory_order_relaxed)),
      m_checked_frame(other.m_checked_frame.load(std::memory_order_relaxed)) {}

clock& clock::operator=(clock&& other) noexcept {
  if (this != &other) {
    release_registration();
    m_proxy = std::exchange(other.m_proxy, nullptr);
    m_phase = other.m_phase;
    m_resumed = other.m_resumed;
    m_signal = other.m_signal;
    m_finish = other.m_finish;
    m_owner.store(other.m_owner.load(std::memory_order_relaxed), std::memory_order_relaxed);
    m_checked_frame.store(other.m_checked_frame.load(std::memory_order_relaxed),
                          std::memory_order_relaxed);
  }
  return *this;
}

clock::~clock() { release_registration(); }

void clock::check_registered(const char* operation) const {
  if (m_proxy == nullptr) [[unlikely]]
    throw clock_use_exception(std::string("apgas: ") + operation +
                              " on a dropped clock (this activity is not registered on it)");
}

void clock::check_owner(const detail::promise_base& frame, const char* operation) {
  check_registered(operation);
  // relaxed throughout: the owner's own reads see its own writes; another activity's read
  // only decides that it is not the owner (see m_owner).
  if (&frame == m_checked_frame.load(std::memory_order_relaxed)) return;
  const detail::promise_base* activity = &detail::activity_of(frame);
  const detail::promise_base* owner = m_owner.load(std::memory_order_relaxed);
  if (owner == nullptr) { // a registration made outside any activity: the first user owns it
    m_owner.store(activity, std::memory_order_relaxed);
    owner = activity;
  }
  if (owner == activity) {
    m_checked_frame.store(&frame, std::memory_order_relaxed);
    return;
  }
  throw clock_use_exception(
      std::string("apgas: ") + operation +
      " by an activity that is not registered on the clock (it uses another activity's "
      "registration: start it with apgas::clocked(c) to register it)");
}

void clock::bind_to(const detail::promise_base& frame) noexcept {
  m_owner.store(&detail::activity_of(frame), std::memory_order_relaxed);
  m_checked_frame.store(nullptr, std::memory_order_relaxed);
}

std::uint64_t clock::phase() const {
  check_registered("phase()");
  return m_phase;
}

void clock::resume() {
  check_registered("resume()");
  detail::check_not_in_atomic("resume()");
  if (m_resumed) return; // X10: nothing happens on a second resume in the same phase
  m_proxy->resume(m_phase, nullptr);
  m_resumed = true;
}

detail::advance_awaiter<void> clock::advance() { return advance(m_signal); }

detail::advance_awaiter<void> clock::advance(signal s) {
  return detail::advance_awaiter<void>(*this, s);
}

void clock::drop() {
  check_registered("drop()");
  detail::check_not_in_atomic("drop()");
  release_registration();
}

void clock::release_registration() noexcept {
  if (m_proxy == nullptr) return;
  detail::clock_proxy* px = std::exchange(m_proxy, nullptr);
  px->drop(m_phase, m_resumed);
  px->release();
}

clock clock::register_child(const detail::promise_base& parent,
                            const detail::finish_state* spawner) {
  check_owner(parent, "a clocked async");
  if (m_finish != nullptr && spawner != m_finish)
    throw clock_use_exception("apgas: a clocked async inside a finish nested in the activity "
                              "registered on the clock: the finish would wait for the child, "
                              "and the child for the activity's next phase (deadlock)");
  m_proxy->register_child(m_phase, m_resumed);
  m_proxy->retain();
  clock child;
  child.m_proxy = m_proxy;
  child.m_phase = m_phase;
  child.m_resumed = m_resumed; // X10: a child of a resumed activity starts resumed
  child.m_signal = m_signal;
  child.m_finish = spawner;
  return child; // bound to the child's activity as it starts (run_clocked)
}

detail::clock_token clock::register_remote_child(const detail::promise_base& parent,
                                                 const detail::finish_state* spawner, place_id to) {
  check_owner(parent, "a clocked async_at");
  if (m_finish != nullptr && spawner != m_finish)
    throw clock_use_exception("apgas: a clocked async_at inside a finish nested in the "
                              "activity registered on the clock: the finish would wait for the "
                              "child, and the child for the activity's next phase (deadlock)");
  if (m_resumed)
    throw clock_use_exception(
        "apgas: a clocked async_at by an activity that has resumed the clock in its phase: a "
        "registration crosses places only in a phase its spawner has not resumed (spawn "
        "before resume(), or advance first; a local clocked async may start resumed)");
  return m_proxy->register_remote(m_phase, to);
}

void clock::unregister_remote_child(place_id to) noexcept {
  m_proxy->unregister_remote(m_phase, to);
}

// ---- advance ---------------------------------------------------------------------------------

bool clock::begin_advance(const detail::promise_base& frame, const detail::reduce_contribution* c,
                          signal s) {
  // A loop of advances comes from one frame: checked once (see check_owner).
  if (m_proxy == nullptr || &frame != m_checked_frame.load(std::memory_order_relaxed)) [[unlikely]]
    check_owner(frame, "advance()");
  detail::check_not_in_atomic("advance()");
  if (m_resumed) {
    // X10: an advance after resume waits for the phase it resumed, and only for it.
    if (c != nullptr)
      throw clock_use_exception("apgas: advance with a reduction after resume() in the same "
                                "phase: the contribution must come with the phase's resume");
  } else {
    const bool watching = m_proxy->resume(m_phase, c, true);
    m_resumed = true;
    // On the collective path the last resume of the place casts the phase's vote, and its
    // advance waits in place for the group allreduce if the worker has nothing else to do,
    // lazy or eager alike (the two differ in how other waiters wake).
    if (watching && m_proxy->module().wait_in_place(*m_proxy, m_phase)) return true;
  }
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

namespace detail {
bool start_advance(clock& c, const promise_base& frame, const reduce_contribution* contribution,
                   signal s, std::exception_ptr& error) noexcept {
  try {
    return c.begin_advance(frame, contribution, s);
  } catch (...) {
    error = std::current_exception();
    return true;
  }
}
} // namespace detail

std::coroutine_handle<> clock::suspend_advance(detail::clock_waiter& w) {
  detail::clock_protocol& module = m_proxy->module();
  module.counters().advances_waited.fetch_add(1, std::memory_order_relaxed); // a statistic
  // What this worker runs next is decided before the activity is published: once it is
  // queued, the phase's end may resume it at once on another worker.
  if (detail::g_trace_on) [[unlikely]]
    w.wait.begin(); // before the wait publishes it: the phase's end may resume it at once
  const std::coroutine_handle<> next = detail::t_worker->suspend_for_external();
  if (!m_proxy->wait(m_phase, w)) module.sched().inject(detail::as_independent(w.activity));
  return next;
}

void clock::end_advance(void* result, std::size_t size) {
  // The phase ended: the registration is in the next one, not resumed there, whatever the
  // reduction gives (the clock goes on).
  const std::uint64_t ended = m_phase++;
  m_resumed = false;
  if (result == nullptr) return;
  const detail::clock_partial& r = m_proxy->result_of(ended);
  if (r.failed()) r.rethrow();
  if (r.size != size)
    throw clock_use_exception("apgas: the contributions to a clock phase's reduction use "
                              "different types");
  std::memcpy(result, r.value.data(), size);
}

} // namespace apgas
