// The GLB protocol module of a place: its four message kinds (steal, lifeline, loot, refusal;
// see apgas/detail/glb_place.hpp for the protocol and why none of them is counted by the run's
// finish), the run in progress at this place, and its clause in the progress line.
#pragma once

#include "apgas/detail/glb_alarm.hpp"
#include "apgas/detail/glb_place.hpp"
#include "apgas/detail/message_format.hpp"
#include "apgas/detail/protocol_module.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>

namespace apgas::detail::glb {

/// @brief The GLB module of a place. Thread-safety: any thread; handlers one at a time.
class glb_module final : public protocol_module {
public:
  explicit glb_module(message_dispatcher& dispatcher);

  /// @brief The module of `dispatcher`. @throws std::logic_error if it has none (the program was
  /// linked without apgas_glb's registration: cannot happen through <apgas/glb.hpp>).
  static glb_module& of(message_dispatcher& dispatcher);

  /// @brief Sends one GLB message of run `run` to `to`, at once (somebody waits for it).
  void send(place_id to, message what, std::uint64_t run, std::span<const std::byte> payload);

  /// @brief Makes `place` the run in progress. @throws std::logic_error if there is one.
  void install(std::shared_ptr<place_base> place);
  /// @brief Forgets run `run` (if current): its later messages are dropped.
  void uninstall(std::uint64_t run) noexcept;
  /// @brief The run in progress if its id is `run`, else null.
  std::shared_ptr<place_base> find(std::uint64_t run) const;

  /// @brief The alarm of this place's checkpoint coordinator (see glb_alarm.hpp).
  glb::alarm& alarm() noexcept { return m_alarm; }
  /// @brief Fires the alarm if it fell due, and then freezes this place's part of the run:
  /// its working activities park, and a worker is free for the coordinator (which freezes
  /// the other places).
  void tick() noexcept;

  /// @brief "glb: N items (R M/s)" while a run is in progress, else empty (progress thread).
  std::string progress_text() const;
  /// @brief The run in progress for the state dump (SIGUSR1): items, working activities,
  /// the thief, thieves waiting here, lifelines; empty if none.
  std::string describe() const;

private:
  void on_steal(place_id from, std::span<const std::byte> body);
  void on_lifeline(place_id from, std::span<const std::byte> body);
  void on_loot(place_id from, std::span<const std::byte> body);
  void on_refusal(place_id from, std::span<const std::byte> body);
  /// The run a message names (its first 8 bytes), and the rest of it.
  std::pair<std::shared_ptr<place_base>, std::span<const std::byte>>
  place_of_message(std::span<const std::byte> body, std::uint64_t& run) const;

  void before_poll() noexcept { tick(); }
  void on_freeze(place_id from, std::span<const std::byte> body);

  message_dispatcher& m_dispatcher;
  message_kind m_kinds[5]; ///< by glb::message
  glb::alarm m_alarm;

  mutable std::mutex m_mutex; ///< guards m_current and the progress fields
  std::shared_ptr<place_base> m_current;
  mutable std::uint64_t m_progress_items = 0;
  mutable std::chrono::steady_clock::time_point m_progress_at{};
};

} // namespace apgas::detail::glb
