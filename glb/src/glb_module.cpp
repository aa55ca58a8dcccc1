// The GLB module (see glb_module.hpp): message kinds, the run in progress, progress clause.
#include "glb_module.hpp"

#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/transport.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace apgas::detail::glb {

namespace {
constexpr std::size_t k_run_bytes = sizeof(std::uint64_t);
} // namespace

glb_module::glb_module(message_dispatcher& dispatcher)
    : m_dispatcher(dispatcher),
      m_kinds{dispatcher.add_handler<&glb_module::on_steal>(*this, "glb steal"),
              dispatcher.add_handler<&glb_module::on_lifeline>(*this, "glb lifeline"),
              dispatcher.add_handler<&glb_module::on_loot>(*this, "glb loot"),
              dispatcher.add_handler<&glb_module::on_refusal>(*this, "glb refusal"),
              dispatcher.add_handler<&glb_module::on_freeze>(*this, "glb freeze")},
      m_alarm(dispatcher) {
  dispatcher.describes_progress_with<&glb_module::progress_text>(*this);
  dispatcher.describes_state_with<&glb_module::describe>(*this, "glb");
  dispatcher.before_each_poll<&glb_module::before_poll>(*this);
}

std::string glb_module::describe() const {
  std::shared_ptr<place_base> run;
  {
    const std::lock_guard guard(m_mutex);
    run = m_current;
  }
  return run == nullptr ? std::string() : run->describe();
}

glb_module& glb_module::of(message_dispatcher& dispatcher) {
  glb_module* m = dispatcher.find_module<glb_module>();
  if (m == nullptr)
    throw std::logic_error("apgas: this place has no GLB module (apgas_glb is not linked)");
  return *m;
}

void glb_module::send(place_id to, message what, std::uint64_t run,
                      std::span<const std::byte> payload) {
  const message_kind kind = m_kinds[static_cast<std::size_t>(what)];
  if (payload.empty()) {
    m_dispatcher.net().send_now(to, pack_head(kind, run));
    return;
  }
  std::vector<std::byte> bytes(1 + k_run_bytes + payload.size());
  pack_into(bytes.data(), kind, run);
  std::memcpy(bytes.data() + 1 + k_run_bytes, payload.data(), payload.size());
  m_dispatcher.net().send_now(to, bytes);
}

void glb_module::install(std::shared_ptr<place_base> place) {
  std::lock_guard guard(m_mutex);
  if (m_current != nullptr)
    throw std::logic_error("apgas: a GLB run is in progress already (one at a time)");
  m_current = std::move(place);
  m_progress_items = 0;
  m_progress_at = std::chrono::steady_clock::now();
}

void glb_module::uninstall(std::uint64_t run) noexcept {
  std::shared_ptr<place_base> old; // freed outside the lock
  std::lock_guard guard(m_mutex);
  if (m_current != nullptr && m_current->run_id() == run) old = std::exchange(m_current, nullptr);
}

std::shared_ptr<place_base> glb_module::find(std::uint64_t run) const {
  std::lock_guard guard(m_mutex);
  if (m_current != nullptr && m_current->run_id() == run) return m_current;
  return nullptr;
}

std::string glb_module::progress_text() const {
  std::lock_guard guard(m_mutex);
  if (m_current == nullptr) return {};
  const auto now = std::chrono::steady_clock::now();
  const std::uint64_t items = m_current->items_so_far();
  const double window = std::chrono::duration<double>(now - m_progress_at).count();
  const double rate = window > 0 ? static_cast<double>(items - m_progress_items) / window : 0.0;
  m_progress_items = items;
  m_progress_at = now;
  return fmt::format("glb: {} items ({:.2f} M/s)", items, rate / 1e6);
}

std::pair<std::shared_ptr<place_base>, std::span<const std::byte>>
glb_module::place_of_message(std::span<const std::byte> body, std::uint64_t& run) const {
  if (body.size() < k_run_bytes) throw transport_error("apgas: a GLB message without its run id");
  std::memcpy(&run, body.data(), k_run_bytes);
  return {find(run), body.subspan(k_run_bytes)};
}

void glb_module::on_steal(place_id from, std::span<const std::byte> body) {
  std::uint64_t run = 0;
  auto [place, rest] = place_of_message(body, run);
  // A thief waits for every request's answer; a run's requests all arrive while it is
  // installed (its setup ended everywhere before any place started, and its thieves end
  // before its finish). Answer a stray one anyway rather than leave a thief waiting.
  if (place == nullptr) return send(from, message::refusal, run, {});
  place->on_steal_request(from);
}

void glb_module::on_lifeline(place_id from, std::span<const std::byte> body) {
  std::uint64_t run = 0;
  auto [place, rest] = place_of_message(body, run);
  if (place != nullptr) place->on_lifeline_request(from); // else: of a run that ended
}

void glb_module::on_loot(place_id from, std::span<const std::byte> body) {
  std::uint64_t run = 0;
  auto [place, rest] = place_of_message(body, run);
  if (place == nullptr)
    throw transport_error(
        fmt::format("apgas: GLB loot from place {} for run {}, not in progress", from, run));
  place->on_answer(rest);
}

void glb_module::on_refusal(place_id from, std::span<const std::byte> body) {
  std::uint64_t run = 0;
  auto [place, rest] = place_of_message(body, run);
  if (place == nullptr)
    throw transport_error(
        fmt::format("apgas: a GLB refusal from place {} for run {}, not in progress", from, run));
  place->on_answer(std::nullopt);
}

void glb_module::on_freeze(place_id, std::span<const std::byte> body) {
  std::uint64_t run = 0;
  auto [place, rest] = place_of_message(body, run);
  if (place != nullptr) place->on_freeze(); // else: of a run that ended
}

void glb_module::tick() noexcept {
  if (!m_alarm.fire_if_due()) return;
  std::shared_ptr<place_base> run;
  {
    const std::lock_guard guard(m_mutex);
    run = m_current;
  }
  if (run == nullptr) return;
  try {
    run->freeze();
  } catch (...) { // refusals that could not leave: the network failed, the job ends with it
  }
}

// ---- the free functions of glb_place.hpp that reach the module ------------------------------

message_dispatcher& current_dispatcher() { return message_dispatcher::current(); }

alarm& checkpoint_alarm() { return glb_module::of(message_dispatcher::current()).alarm(); }

place_base& place_of_run(std::uint64_t run) {
  std::shared_ptr<place_base> p = glb_module::of(message_dispatcher::current()).find(run);
  if (p == nullptr)
    throw std::logic_error(fmt::format("apgas: GLB run {} is not in progress here", run));
  return *p; // kept alive by the module until the run's gather reaches this place
}

std::shared_ptr<place_base> find_place(std::uint64_t run) {
  return glb_module::of(message_dispatcher::current()).find(run);
}

void install_place(std::shared_ptr<place_base> place) {
  glb_module::of(message_dispatcher::current()).install(std::move(place));
}

void uninstall_place(std::uint64_t run) noexcept {
  if (message_dispatcher* e = message_dispatcher::current_or_null())
    if (glb_module* m = e->find_module<glb_module>()) m->uninstall(run);
}

} // namespace apgas::detail::glb

APGAS_REGISTER_PROTOCOL_MODULE(glb, [](apgas::detail::message_dispatcher& dispatcher) {
  dispatcher.add_module<apgas::detail::glb::glb_module>();
});
