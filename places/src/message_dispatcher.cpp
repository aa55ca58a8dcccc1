// The dispatcher of a place (see message_dispatcher.hpp): handler registrations, delivery of each
// message to its module, progress for idle workers, and the dump of a hung run's state.
#include "apgas/detail/message_dispatcher.hpp"

#include "apgas/detail/scheduler.hpp"
#include "apgas/place.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <stdexcept>

namespace apgas::detail {

namespace {

std::atomic<message_dispatcher*> g_dispatcher{
    nullptr}; // the runtime's dispatcher (see set_current)

/// Modules of other folders, by name (see register_protocol_module). Filled by static
/// initialisers before main, read by runtimes after: no lock needed.
std::map<std::string, protocol_module_factory>& registered_modules() {
  static std::map<std::string, protocol_module_factory> modules;
  return modules;
}

// Set by SIGUSR1: the next poll prints this place's state. A lock-free atomic (async-signal-
// safe), read by another thread than the handler's. relaxed: a request flag; the dump reads
// nothing the handler wrote.
std::atomic<bool> g_dump_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void request_dump(int) {
  g_dump_requested.store(true, std::memory_order_relaxed);
  // A parked worker polls (and dumps) once woken: without it, a place whose workers all park
  // without a watcher (one place, nothing to poll for) would never print. Lock-free atomics
  // and a futex wake: async-signal-safe.
  // acquire: the dispatcher was published by set_current (release).
  if (message_dispatcher* dispatcher = g_dispatcher.load(std::memory_order_acquire))
    dispatcher->sched().wake_for_network();
}

[[noreturn, gnu::cold, gnu::noinline]] void throw_unknown_kind(place_id here, place_id from,
                                                               std::size_t size, unsigned kind) {
  throw transport_error(
      size == 0 ? fmt::format("apgas: place {}: an empty message from place {}", here, from)
                : fmt::format("apgas: place {}: unknown message kind {} from place {}", here, kind,
                              from));
}

} // namespace

bool register_protocol_module(const char* name, protocol_module_factory make) {
  if (!registered_modules().emplace(name, make).second) {
    std::fprintf(stderr, "apgas: two protocol modules are named %s\n", name);
    std::abort(); // before main: no one could catch an exception
  }
  return true;
}

void code_anchor() noexcept { std::fputs("", stderr); }

message_dispatcher::message_dispatcher(scheduler& sched, std::unique_ptr<transport> net)
    : m_sched(sched), m_net(std::move(net)), m_here(m_net->here()), m_places(m_net->places()),
      m_loopback_only(m_net->loopback_only()), m_awaited(sched) {
  m_net->set_handler(
      [this](place_id from, std::span<const std::byte> bytes) { on_message(from, bytes); });
  m_net->set_batch_end_handler([this] { end_delivery(); });
  // A place that only hears itself needs no timed polls while nothing is buffered: its
  // workers sleep until a send wakes one (see needs_polls_when_idle).
  if (m_loopback_only) m_net->set_send_hook([this] { m_sched.wake_for_network(); });
}

message_dispatcher::~message_dispatcher() {
  if (current_or_null() == this) set_current(nullptr);
  while (!m_modules.empty()) m_modules.pop_back(); // newest first
}

message_dispatcher& message_dispatcher::current() {
  // acquire: pairs with set_current's release, so the caller sees the dispatcher constructed.
  message_dispatcher* e = g_dispatcher.load(std::memory_order_acquire);
  if (e == nullptr)
    throw std::logic_error("apgas: no runtime: create an apgas::runtime before using places");
  return *e;
}

message_dispatcher* message_dispatcher::current_or_null() noexcept {
  return g_dispatcher.load(std::memory_order_acquire); // acquire: see current()
}

void message_dispatcher::set_current(message_dispatcher* e) noexcept {
  g_dispatcher.store(e, std::memory_order_release); // release: see current()
}

void message_dispatcher::check_place(place_id p) const {
  if (p >= m_places) throw bad_place(p, m_places);
}

// ---- registrations ---------------------------------------------------------------------------

void message_dispatcher::add_registered_modules() {
  for (const auto& [name, make] : registered_modules()) make(*this);
}

message_kind message_dispatcher::add_handler(std::string name, handler_fn fn, void* module) {
  // Kind 0 stays unused: a zeroed message is never taken for a real one.
  const std::size_t kind = m_handler_names.size() + 1;
  if (kind >= m_handlers.size())
    throw std::logic_error(fmt::format("apgas: no message kind left for '{}'", name));
  m_handlers[kind] = handler_entry{fn, module};
  m_handler_names.push_back(std::move(name));
  return static_cast<message_kind>(kind);
}

// ---- delivery --------------------------------------------------------------------------------

void message_dispatcher::on_message(place_id from, std::span<const std::byte> bytes) {
  const unsigned kind = bytes.empty() ? 0 : static_cast<unsigned>(bytes[0]);
  const handler_entry& h = m_handlers[kind];
  if (h.fn == nullptr) [[unlikely]]
    throw_unknown_kind(m_here, from, bytes.size(), kind);
  h.fn(h.module, from, bytes.subspan(1));
}

message_kind message_dispatcher::kind_named(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < m_handler_names.size(); ++i)
    if (m_handler_names[i] == name) return static_cast<message_kind>(i + 1);
  return 0;
}

void message_dispatcher::handle(place_id from, message_kind kind, std::span<const std::byte> body) {
  const handler_entry& h = m_handlers[kind];
  if (h.fn == nullptr) [[unlikely]]
    throw_unknown_kind(m_here, from, body.size() + 1, kind);
  h.fn(h.module, from, body);
}

bool message_dispatcher::poll() noexcept {
  if (g_dump_requested.load(std::memory_order_relaxed)) [[unlikely]] {
    g_dump_requested.store(false, std::memory_order_relaxed);
    dump_state();
  }
  try {
    for (const hook& h : m_before_poll) h.fn(h.module);
    return m_net->poll() > 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: message handling failed: %s\n", m_here, e.what());
    std::fflush(stderr);
    std::abort(); // a lost message would hang the job: end it, loudly
  }
}

void message_dispatcher::flush() noexcept {
  try {
    for (const hook& h : m_before_flush) h.fn(h.module);
    m_net->flush();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: flush failed: %s\n", m_here, e.what());
    std::abort();
  }
}

bool message_dispatcher::wait_in_place(bool (*arrived)(const void*) noexcept,
                                       const void* arg) noexcept {
  const unsigned spin_us = m_sched.opts().spin_us;
  if (spin_us == 0 || m_sched.work_visible()) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  // A poll is pause enough (and on an oversubscribed node MPI's progress yields the core).
  for (unsigned round = 1;; ++round) {
    (void)poll();
    if (arrived(arg)) return true;
    if (round % 16 == 0 && (std::chrono::steady_clock::now() > deadline || m_sched.work_visible()))
      return false;
  }
}

bool message_dispatcher::needs_polls_when_idle() const noexcept {
  if (!m_loopback_only) return true; // other places may send at any time
  // One place: only what it sent itself can arrive, so polls are needed only while something
  // is buffered, queued or undelivered. seq_cst fence: the parking worker's half of the
  // Dekker pattern with the send hook (the sender appends, then fences in notify_one and reads
  // the sleepers): either the sender sees this worker parked and wakes it, or this read sees
  // the message. A report held for another place's ask cannot exist here (every finish is
  // home), nor a reply from elsewhere.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return !m_net->quiescent();
}

bool message_dispatcher::expecting_messages() const noexcept {
  if (m_awaited.load_signed() > 0) return true; // relaxed inside: a hint
  return std::any_of(m_expecting.begin(), m_expecting.end(),
                     [](const predicate& p) { return p.fn(p.module); });
}

// ---- diagnostics -----------------------------------------------------------------------------

void message_dispatcher::install_dump_signal() { std::signal(SIGUSR1, &request_dump); }

std::string message_dispatcher::describe_state() const {
  std::string s;
  for (const describer& d : m_describers) {
    const std::string section = d.fn(d.module);
    s += section.empty() ? fmt::format("  {}: none\n", d.title)
                         : fmt::format("  {}:\n{}", d.title, section);
  }
  return s;
}

std::string message_dispatcher::describe_stats() const {
  std::string s;
  for (const describer& d : m_stats) s += d.fn(d.module);
  return s;
}

std::string message_dispatcher::progress_text() const {
  std::string s;
  for (const describer& d : m_progress) {
    const std::string clause = d.fn(d.module);
    if (clause.empty()) continue;
    if (!s.empty()) s += "; ";
    s += clause;
  }
  return s;
}

void message_dispatcher::dump_state() const noexcept {
  try {
    const std::string state = describe_state();
    std::fprintf(stderr, "apgas: place %u: state\n%s", m_here, state.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: cannot describe its state: %s\n", m_here, e.what());
  }
}

} // namespace apgas::detail
