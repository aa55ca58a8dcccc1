// Teams at one place (see <apgas/team.hpp>): their handles, the collectives in flight (listed
// in the state dump), and how a collective suspends and wakes its activity.
#include "apgas/team.hpp"

#include "apgas/detail/call_site.hpp"
#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/protocol_module.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/worker.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>

namespace apgas {
namespace detail {

namespace {

/// The teams module of a place: the network's collectives, the world team, and the list of
/// collectives in flight. A protocol module without messages (registered so that the state
/// dump lists what a hung collective waits for).
class team_module final : public protocol_module {
public:
  explicit team_module(message_dispatcher& dispatcher)
      : m_dispatcher(dispatcher), m_net(dispatcher.net().collectives()),
        m_alive(std::make_shared<int>(0)) {
    dispatcher.describes_state_with<&team_module::describe>(*this, "collectives in flight");
  }
  ~team_module() override { m_world.reset(); }

  static team_module& current() {
    team_module* m = message_dispatcher::current().find_module<team_module>();
    if (m == nullptr) [[unlikely]]
      throw std::logic_error("apgas: this runtime has no teams module");
    return *m;
  }

  collective_network& net() const {
    if (m_net == nullptr)
      throw std::logic_error("apgas: teams need a network with collectives (MPI or one place)");
    return *m_net;
  }
  message_dispatcher& dispatcher() const noexcept { return m_dispatcher; }
  std::weak_ptr<int> alive() const noexcept { return m_alive; }

  std::shared_ptr<team_state> world();

  void list(collective_waiter& w) {
    const std::lock_guard guard(m_mutex);
    w.m_prev = nullptr;
    w.m_next = m_first;
    if (m_first != nullptr) m_first->m_prev = &w;
    m_first = &w;
  }
  void unlist(collective_waiter& w) noexcept {
    const std::lock_guard guard(m_mutex);
    (w.m_prev != nullptr ? w.m_prev->m_next : m_first) = w.m_next;
    if (w.m_next != nullptr) w.m_next->m_prev = w.m_prev;
  }

  std::string describe() const {
    const std::lock_guard guard(m_mutex);
    std::string s;
    const auto now = std::chrono::steady_clock::now();
    for (const collective_waiter* w = m_first; w != nullptr; w = w->m_next)
      s += fmt::format("    {} on team {} for {:.3f} s, called at {}:{} in {}\n",
                       to_string(w->m_call.kind), w->m_call.team,
                       std::chrono::duration<double>(now - w->m_since).count(),
                       w->m_site.file_name(), w->m_site.line(),
                       readable_function_name(w->m_site.function_name()));
    return s;
  }

private:
  message_dispatcher& m_dispatcher;
  collective_network* m_net;
  std::shared_ptr<int> m_alive; ///< teams free their handle only while it lives
  std::mutex m_world_mutex;
  std::shared_ptr<team_state> m_world;
  mutable std::mutex m_mutex;
  collective_waiter* m_first = nullptr;
};

} // namespace

APGAS_REGISTER_PROTOCOL_MODULE(teams, [](message_dispatcher& dispatcher) {
  dispatcher.add_module<team_module>();
});

/// One step of splitmix64: mixes team ids so that teams made in different ways differ.
constexpr std::uint64_t mix_id(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct team_state {
  team_state(team_module& m, team_handle h, std::uint64_t team_id)
      : module(&m), handle(h), members(m.net().members(h)), rank(m.net().rank(h)), alive(m.alive()),
        id(team_id) {}
  ~team_state() {
    // A team that outlives its runtime has nothing left to free.
    if (handle != k_world_team && !alive.expired()) module->net().free(handle);
  }
  team_module* module;
  team_handle handle;
  std::vector<place_id> members;
  place_id rank;
  std::weak_ptr<int> alive;
  /// The same at every member: the world's is fixed, a split's mixes its parent's, the
  /// parent's split count and the color (splits happen in the same order at every member).
  std::uint64_t id;
  /// relaxed: members call split and new_object_id in the team's collective order, one
  /// activity at a time; the atomics only keep concurrent misuse from being a data race.
  mutable std::atomic<std::uint64_t> splits{0};
  mutable std::atomic<std::uint64_t> objects{0};
};

std::shared_ptr<team_state> team_module::world() {
  const std::lock_guard guard(m_world_mutex);
  if (m_world == nullptr) m_world = std::make_shared<team_state>(*this, k_world_team, mix_id(0));
  return m_world;
}

// ---- a collective in flight -----------------------------------------------------------------

collective_waiter::collective_waiter(const std::shared_ptr<team_state>& team,
                                     const collective_call& call, std::source_location site)
    : m_call(call), m_site(site), m_team(team) {
  m_call.team = team->handle;
}

bool collective_waiter::start() {
  try {
    m_team->module->net().start(m_call, *this);
  } catch (...) {
    m_error = std::current_exception();
    return true;
  }
  // acquire: pairs with done()'s exchange (its error).
  if (m_phase.load(std::memory_order_acquire) == k_done) return true;
  return wait_in_place();
}

bool collective_waiter::wait_in_place() {
  // A worker with nothing else to do tests the collective itself for up to --spin-us, as a
  // blocking MPI call would, instead of suspending: resuming the activity through the
  // scheduler after the place's next full poll costs more than a small collective's rounds.
  // Meanwhile it sends what it buffered and, every 128 tests, polls the place as an idle
  // worker would; work that shows up ends the wait (the activity then suspends as usual). No
  // yield of its own: on an oversubscribed node MPI's progress already yields, and a second
  // one per test tripled a barrier's time at 4 places on 2 cores.
  message_dispatcher& dispatcher = m_team->module->dispatcher();
  const scheduler& sched = dispatcher.sched();
  const unsigned spin_us = sched.opts().spin_us;
  if (spin_us == 0 || sched.work_visible()) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  collective_network& net = m_team->module->net();
  dispatcher.flush();
  for (unsigned round = 1;; ++round) {
    if (round % 128 == 0) dispatcher.poll();
    else net.progress();
    // acquire: pairs with done()'s exchange (its error).
    if (m_phase.load(std::memory_order_acquire) == k_done) return true;
    if (round % 16 == 0 && (std::chrono::steady_clock::now() > deadline || sched.work_visible()))
      return false;
  }
}

std::coroutine_handle<> collective_waiter::suspend(promise_base& activity) {
  team_module& module = *m_team->module;
  m_activity = &activity;
  m_since = std::chrono::steady_clock::now();
  // What this worker runs next is decided before the activity can be woken (on another
  // thread's poll, which then makes the activity runnable).
  const std::coroutine_handle<> next = t_worker->suspend_for_external();
  module.list(*this);
  module.dispatcher().expect_message(); // idle workers poll eagerly meanwhile
  if (m_phase.exchange(k_suspended, std::memory_order_acq_rel) == k_done) wake();
  return next;
}

void collective_waiter::done(std::exception_ptr error) noexcept {
  m_error = std::move(error);
  if (m_phase.exchange(k_done, std::memory_order_acq_rel) == k_suspended) wake();
}

void collective_waiter::wake() noexcept {
  team_module& module = *m_team->module;
  module.unlist(*this);
  module.dispatcher().expected_message_arrived();
  module.dispatcher().sched().inject(as_independent(m_activity));
}

} // namespace detail

// ---- team -------------------------------------------------------------------------------------

team team::world() { return team(detail::team_module::current().world()); }

const detail::team_state& team::state() const {
  if (m_state == nullptr) throw std::logic_error("apgas: a collective on no team");
  return *m_state;
}

place_id team::size() const { return static_cast<place_id>(state().members.size()); }
place_id team::rank() const { return state().rank; }
const std::vector<place_id>& team::places() const { return state().members; }

place_id team::place(place_id r) const {
  const std::vector<place_id>& m = state().members;
  if (r >= m.size())
    throw std::out_of_range(fmt::format("apgas: team rank {} of a team of {}", r, m.size()));
  return m[r];
}

std::uint64_t team::new_object_id() const {
  const detail::team_state& s = state();
  const std::uint64_t nth = s.objects.fetch_add(1, std::memory_order_relaxed);
  return detail::mix_id(s.id ^ detail::mix_id(~nth));
}

task<team> team::split(int color, int key) const {
  // Every member is here before any enters the network's split, which blocks its place's
  // network until all have (see collective_network::split).
  co_await barrier();
  const detail::team_state& parent = state();
  const std::uint64_t nth = parent.splits.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t id = detail::mix_id(
      parent.id ^ detail::mix_id(nth ^ detail::mix_id(static_cast<std::uint64_t>(color))));
  detail::team_module& module = *m_state->module;
  const detail::team_handle h = module.net().split(m_state->handle, color, key);
  if (h == detail::k_no_team) co_return team();
  co_return team(std::make_shared<detail::team_state>(module, h, id));
}

} // namespace apgas
