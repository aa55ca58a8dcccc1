// The halo exchange's channels and messages (see apgas/detail/halo_exchange.hpp).
#include "apgas/detail/halo_exchange.hpp"

#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/message_format.hpp"
#include "apgas/detail/protocol_module.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/worker.hpp"
#include "apgas/serialization.hpp"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace apgas::detail {

namespace {

/// A message that came before its exchange opened here.
struct early_message {
  std::uint64_t exchange = 0;
  std::uint8_t side = 0;
  std::vector<std::byte> bytes;
};

/// Copies `data` into the runs of `to`. pre: data.size() == to.bytes().
void scatter(const halo_region& to, std::span<const std::byte> data) {
  const std::byte* from = data.data();
  std::byte* at = to.first;
  for (std::size_t r = 0; r < to.runs; ++r, from += to.run_bytes, at += to.stride)
    std::memcpy(at, from, to.run_bytes);
}

} // namespace

/// One array's exchanges at this place. Guarded by `mutex`, which a message's scatter into
/// the ghosts holds too: the exchange cannot close or reopen under it.
struct halo_channel_state {
  std::mutex mutex;
  bool open = false; ///< an exchange is open: its messages go straight into `ghosts`
  std::uint64_t exchange = 0;
  halo_ghosts ghosts{};
  std::size_t expected = 0;
  std::size_t arrived = 0;
  std::string error;                ///< a message that did not fit its ghosts (thrown by await)
  std::vector<early_message> early; ///< at most one exchange ahead (see place_message)
  std::vector<std::vector<std::byte>> spare; ///< early messages' buffers, for reuse
  promise_base* waiter = nullptr;
  scheduler* sched = nullptr;

  /// Scatters one message of the open exchange; true if it was the last. pre: mutex held.
  bool take(std::uint8_t side, std::span<const std::byte> data) {
    if (side >= k_halo_sides || ghosts[side].runs == 0 || data.size() != ghosts[side].bytes())
      error = fmt::format("apgas: a halo message of {} bytes for side {}, which expects {}",
                          data.size(), side, side < k_halo_sides ? ghosts[side].bytes() : 0);
    else scatter(ghosts[side], data);
    return ++arrived == expected;
  }

  /// A message that arrived: into the ghosts if its exchange is open, else kept (a neighbour
  /// cannot be more than one exchange ahead: it waits for this place's message of the
  /// exchange it is in, sent once that exchange opened here). Wakes the waiter if it
  /// completes the exchange.
  void place_message(std::uint64_t e, std::uint8_t side, std::span<const std::byte> data) {
    promise_base* wake = nullptr;
    scheduler* wake_on = nullptr;
    {
      const std::lock_guard guard(mutex);
      if (!open || e != exchange) {
        early_message m{e, side, {}};
        if (!spare.empty()) {
          m.bytes = std::move(spare.back());
          spare.pop_back();
        }
        m.bytes.assign(data.begin(), data.end());
        early.push_back(std::move(m));
        return;
      }
      if (!take(side, data)) return;
      open = false;
      wake = std::exchange(waiter, nullptr);
      wake_on = sched;
    }
    if (wake == nullptr) return;
    message_dispatcher::current().expected_message_arrived();
    wake_on->inject(as_independent(wake));
  }
};

namespace {

/// The halo module of a place: the channels by array id, and messages for an array that has
/// no channel here yet (kept until it has).
class halo_module final : public protocol_module {
public:
  explicit halo_module(message_dispatcher& dispatcher)
      : m_dispatcher(dispatcher),
        m_kind(dispatcher.add_handler<&halo_module::on_halo>(*this, "halo")) {}

  static halo_module& current() {
    halo_module* m = message_dispatcher::current().find_module<halo_module>();
    if (m == nullptr) [[unlikely]]
      throw std::logic_error("apgas: this runtime has no halo module");
    return *m;
  }

  void add(std::uint64_t id, const std::shared_ptr<halo_channel_state>& state) {
    const std::lock_guard guard(m_mutex);
    m_channels[id] = state;
    // Messages that came before the channel: its exchanges take them as they open.
    if (auto it = m_early.find(id); it != m_early.end()) {
      const std::lock_guard channel(state->mutex);
      for (early_message& m : it->second) state->early.push_back(std::move(m));
      m_early.erase(it);
    }
  }
  void remove(std::uint64_t id) {
    const std::lock_guard guard(m_mutex);
    m_channels.erase(id);
  }

  void send(place_id to, std::uint64_t id, std::uint8_t side, std::uint64_t exchange,
            const halo_region& from) {
    thread_local std::vector<std::byte> bytes;
    start_framed(bytes, m_kind, id, exchange, side);
    bytes.reserve(bytes.size() + from.bytes());
    // Gathered straight into the message: its one copy on this side.
    const std::byte* run = from.first;
    for (std::size_t r = 0; r < from.runs; ++r, run += from.stride)
      bytes.insert(bytes.end(), run, run + from.run_bytes);
    m_dispatcher.net().send_now_framed(to, bytes);
  }

private:
  void on_halo(place_id /*from*/, std::span<const std::byte> body) {
    byte_reader r(body);
    const auto id = deserialize<std::uint64_t>(r);
    const auto exchange = deserialize<std::uint64_t>(r);
    const auto side = deserialize<std::uint8_t>(r);
    const std::span<const std::byte> data = r.read_span(r.remaining());
    std::shared_ptr<halo_channel_state> state;
    {
      const std::lock_guard guard(m_mutex);
      auto it = m_channels.find(id);
      if (it == m_channels.end()) {
        m_early[id].push_back(
            early_message{exchange, side, std::vector<std::byte>(data.begin(), data.end())});
        return;
      }
      state = it->second;
    }
    state->place_message(exchange, side, data);
  }

  message_dispatcher& m_dispatcher;
  message_kind m_kind;
  std::mutex m_mutex;
  std::map<std::uint64_t, std::shared_ptr<halo_channel_state>> m_channels;
  std::map<std::uint64_t, std::vector<early_message>> m_early;
};

} // namespace

APGAS_REGISTER_PROTOCOL_MODULE(halo, [](message_dispatcher& dispatcher) {
  dispatcher.add_module<halo_module>();
});

halo_channel::halo_channel(std::uint64_t id) : m_state(std::make_shared<halo_channel_state>()) {
  halo_module::current().add(id, m_state);
  m_id = id;
}

halo_channel::~halo_channel() {
  if (message_dispatcher* dispatcher = message_dispatcher::current_or_null())
    if (halo_module* m = dispatcher->find_module<halo_module>()) m->remove(m_id);
}

void halo_channel::open(std::uint64_t exchange, const halo_ghosts& ghosts) {
  halo_channel_state& s = *m_state;
  const std::lock_guard guard(s.mutex);
  s.exchange = exchange;
  s.ghosts = ghosts;
  s.expected = 0;
  for (const halo_region& g : ghosts) s.expected += g.runs != 0 ? 1 : 0;
  s.arrived = 0;
  // The early messages of this exchange, in place now; those of the next one stay.
  std::size_t kept = 0;
  for (early_message& m : s.early) {
    if (m.exchange != exchange) {
      s.early[kept++] = std::move(m);
      continue;
    }
    s.take(m.side, m.bytes);
    s.spare.push_back(std::move(m.bytes));
  }
  s.early.resize(kept);
  s.open = s.arrived < s.expected;
}

void halo_channel::send(place_id to, std::uint8_t side, std::uint64_t exchange,
                        const halo_region& boundary) {
  halo_module::current().send(to, m_id, side, exchange, boundary);
}

bool halo_channel::arrivals_awaiter::await_ready() {
  const std::lock_guard guard(m_state.mutex);
  return !m_state.open;
}

void halo_channel::arrivals_awaiter::await_resume() const {
  const std::lock_guard guard(m_state.mutex);
  if (!m_state.error.empty()) throw std::logic_error(std::exchange(m_state.error, {}));
}

std::coroutine_handle<> halo_channel::arrivals_awaiter::suspend(promise_base& activity) {
  worker& w = *t_worker;
  // Decided before the activity is published: a message may complete the exchange at once.
  const std::coroutine_handle<> next = w.suspend_for_external();
  bool ready = false;
  {
    const std::lock_guard guard(m_state.mutex);
    ready = !m_state.open;
    if (!ready) {
      m_state.waiter = &activity;
      m_state.sched = &w.sched();
    }
  }
  if (ready) w.sched().inject(as_independent(&activity));
  else message_dispatcher::current().expect_message();
  return next;
}

} // namespace apgas::detail
