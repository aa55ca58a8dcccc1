// The end of a run (see run_protocol.hpp).
#include "run_protocol.hpp"

#include "apgas/detail/message_dispatcher.hpp"

namespace apgas::detail {

run_protocol::run_protocol(message_dispatcher& dispatcher)
    : m_dispatcher(dispatcher),
      m_kind_run_end(dispatcher.add_handler<&run_protocol::on_run_end>(*this, "run end")) {}

void run_protocol::announce_run_end(bool ok, std::span<const std::byte> payload) {
  std::vector<std::byte> bytes{static_cast<std::byte>(m_kind_run_end),
                               static_cast<std::byte>(ok ? 1 : 0)};
  bytes.insert(bytes.end(), payload.begin(), payload.end());
  for (place_id p = 0; p < m_dispatcher.places(); ++p)
    if (p != m_dispatcher.here()) m_dispatcher.net().send(p, bytes);
  m_dispatcher.net().flush();
}

run_end run_protocol::await_run_end() {
  std::unique_lock lock(m_mutex);
  m_cv.wait(lock, [this] { return !m_ends.empty(); });
  auto end = std::move(m_ends.front());
  m_ends.pop_front();
  return end;
}

void run_protocol::on_run_end(place_id /*from*/, std::span<const std::byte> body) {
  if (body.empty()) [[unlikely]]
    throw transport_error("apgas: a run-end message without its ok flag");
  run_end end;
  end.ok = body[0] != std::byte{0};
  end.payload.assign(body.begin() + 1, body.end());
  std::lock_guard guard(m_mutex);
  m_ends.push_back(std::move(end));
  m_cv.notify_all();
}

} // namespace apgas::detail
