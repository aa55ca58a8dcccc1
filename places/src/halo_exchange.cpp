// The halo exchange's channels and messages (see apgas/detail/halo_exchange.hpp).
#include "apgas/detail/halo_exchange.hpp"

#include "apgas/detail/message_format.hpp"
#include "apgas/detail/place_engine.hpp"
#include "apgas/detail/protocol_module.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/detail/worker.hpp"
#include "apgas/serialization.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace apgas::detail {

/// What arrived for one array at this place, by exchange and side, and the activity that
/// waits for an exchange's messages. Guarded by `mutex`.
struct halo_channel_state {
  struct exchange_messages {
    std::size_t count = 0;
    std::map<std::uint8_t, std::vector<std::byte>> sides;
  };
  std::mutex mutex;
  std::map<std::uint64_t, exchange_messages> arrived;
  promise_base* waiter = nullptr;
  std::uint64_t waited_exchange = 0;
  std::size_t waited_count = 0;
  scheduler* sched = nullptr;
};

namespace {

/// The halo module of a place: the channels by array id, and messages for an array that has
/// no channel here yet (kept until it has).
class halo_module final : public protocol_module {
public:
  explicit halo_module(place_engine& engine)
      : m_engine(engine), m_kind(engine.add_handler<&halo_module::on_halo>(*this, "halo")) {}

  static halo_module& current() {
    halo_module* m = place_engine::current().find_module<halo_module>();
    if (m == nullptr) [[unlikely]]
      throw std::logic_error("apgas: this runtime has no halo module");
    return *m;
  }

  void add(std::uint64_t id, const std::shared_ptr<halo_channel_state>& state) {
    const std::lock_guard guard(m_mutex);
    m_channels[id] = state;
    // Messages that came before the channel: deliver them now.
    if (auto it = m_early.find(id); it != m_early.end()) {
      for (auto& [exchange, side, bytes] : it->second)
        deliver(*state, exchange, side, std::move(bytes));
      m_early.erase(it);
    }
  }
  void remove(std::uint64_t id) {
    const std::lock_guard guard(m_mutex);
    m_channels.erase(id);
  }

  void send(place_id to, std::uint64_t id, std::uint8_t side, std::uint64_t exchange,
            std::span<const std::byte> data) {
    thread_local std::vector<std::byte> bytes;
    start_framed(bytes, m_kind, id, exchange, side);
    bytes.insert(bytes.end(), data.begin(), data.end());
    m_engine.net().send_now_framed(to, bytes);
  }

  /// Adds a message to `state`; wakes its waiter if that completes its exchange.
  static void deliver(halo_channel_state& state, std::uint64_t exchange, std::uint8_t side,
                      std::vector<std::byte> bytes) {
    promise_base* wake = nullptr;
    scheduler* sched = nullptr;
    {
      const std::lock_guard guard(state.mutex);
      auto& e = state.arrived[exchange];
      e.sides[side] = std::move(bytes);
      ++e.count;
      if (state.waiter != nullptr && state.waited_exchange == exchange &&
          e.count >= state.waited_count) {
        wake = std::exchange(state.waiter, nullptr);
        sched = state.sched;
      }
    }
    if (wake == nullptr) return;
    place_engine::current().expected_message_arrived();
    sched->inject(as_independent(wake));
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
        m_early[id].emplace_back(exchange, side, std::vector<std::byte>(data.begin(), data.end()));
        return;
      }
      state = it->second;
    }
    deliver(*state, exchange, side, std::vector<std::byte>(data.begin(), data.end()));
  }

  place_engine& m_engine;
  message_kind m_kind;
  std::mutex m_mutex;
  std::map<std::uint64_t, std::shared_ptr<halo_channel_state>> m_channels;
  std::map<std::uint64_t,
           std::vector<std::tuple<std::uint64_t, std::uint8_t, std::vector<std::byte>>>>
      m_early;
};

} // namespace

APGAS_REGISTER_PROTOCOL_MODULE(halo,
                               [](place_engine& engine) { engine.add_module<halo_module>(); });

halo_channel::halo_channel(std::uint64_t id) : m_state(std::make_shared<halo_channel_state>()) {
  halo_module::current().add(id, m_state);
  m_id = id;
}

halo_channel::~halo_channel() {
  if (place_engine* engine = place_engine::current_or_null())
    if (halo_module* m = engine->find_module<halo_module>()) m->remove(m_id);
}

void halo_channel::send(place_id to, std::uint8_t side, std::uint64_t exchange,
                        std::span<const std::byte> data) {
  halo_module::current().send(to, m_id, side, exchange, data);
}

std::span<const std::byte> halo_channel::received(std::uint64_t exchange, std::uint8_t side) const {
  const std::lock_guard guard(m_state->mutex);
  auto e = m_state->arrived.find(exchange);
  if (e == m_state->arrived.end()) return {};
  auto s = e->second.sides.find(side);
  return s == e->second.sides.end() ? std::span<const std::byte>() : std::span(s->second);
}

void halo_channel::release(std::uint64_t exchange) {
  const std::lock_guard guard(m_state->mutex);
  m_state->arrived.erase(exchange);
}

bool halo_channel::arrivals_awaiter::await_ready() {
  const std::lock_guard guard(m_state.mutex);
  auto e = m_state.arrived.find(m_exchange);
  return m_count == 0 || (e != m_state.arrived.end() && e->second.count >= m_count);
}

std::coroutine_handle<> halo_channel::arrivals_awaiter::suspend(promise_base& activity) {
  worker& w = *t_worker;
  // Decided before the activity is published: a message may complete the exchange at once.
  const std::coroutine_handle<> next = w.suspend_for_external();
  bool ready = false;
  {
    const std::lock_guard guard(m_state.mutex);
    auto e = m_state.arrived.find(m_exchange);
    ready = e != m_state.arrived.end() && e->second.count >= m_count;
    if (!ready) {
      m_state.waiter = &activity;
      m_state.waited_exchange = m_exchange;
      m_state.waited_count = m_count;
      m_state.sched = &w.sched();
    }
  }
  if (ready) w.sched().inject(as_independent(&activity));
  else place_engine::current().expect_message();
  return next;
}

} // namespace apgas::detail
