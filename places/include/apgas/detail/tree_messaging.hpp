// Messages that many places send to one (reports to a finish's or a clock's home) and that one
// place sends to many (asks, cleanups, releases), routed along a place_tree so that no place
// handles more than about `arity` messages of them at a time, at any number of places.
//
// Messages (kinds of this module; the payloads are other modules' messages):
//   tree up    entries: (root, kind, original sender, payload)...   toward the roots
//   tree down  root, kind, targets[], payload                        toward the targets
// An entry going up is handed to the root's handler for `kind` as if the original sender had
// sent it; a place on the way relays the entries it received in one delivery as one message
// (entries are kept, not merged: protocols that count per place, as the distributed finish
// does, stay exact). A message going down is handed to each target's handler for `kind` as if
// the root had sent it; a place on the way splits the targets among its children. Up to
// `--tree-arity` + 1 places the tree is flat: every message goes straight to its place.
#pragma once

#include "apgas/detail/message_format.hpp"
#include "apgas/detail/place_tree.hpp"
#include "apgas/detail/protocol_module.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace apgas::detail {

/// @brief Messages of tree_messaging (relaxed counters: statistics only).
struct tree_counters {
  std::atomic<std::uint64_t> up_sent{0};         ///< tree-up messages (one or more entries)
  std::atomic<std::uint64_t> entries_relayed{0}; ///< entries this place forwarded for others
  std::atomic<std::uint64_t> down_sent{0};       ///< tree-down messages
};

/// @brief The tree messaging module of a place. Thread-safety: any thread.
class tree_messaging final : public protocol_module {
public:
  explicit tree_messaging(message_dispatcher& dispatcher);

  /// @brief The tree rooted at `root` over this run's places.
  place_tree tree(place_id root) const noexcept { return place_tree(root, m_places, m_arity); }
  /// @brief Delivers `payload` to the handler for `kind` at `root`, as a message from here.
  /// Sent at once (to root itself: handled now, on this thread).
  void send_up(place_id root, message_kind kind, std::span<const std::byte> payload);
  /// @brief Delivers `payload` to the handler for `kind` at each of `targets` (any places; here
  /// included: handled now, on this thread), as a message from here. pre: here is `root`.
  void multicast(place_id root, const std::vector<place_id>& targets, message_kind kind,
                 std::span<const std::byte> payload);
  const tree_counters& counters() const noexcept { return m_counters; }

private:
  /// The handler of `tree up`: hands each entry rooted here to its kind's handler and keeps
  /// the others to relay toward their roots (flush_relays sends them).
  void deliver_or_relay_up(place_id from, std::span<const std::byte> body);
  /// The handler of `tree down`: passes the targets below this place on to its children, and
  /// hands the payload to its kind's handler if this place is a target.
  void deliver_and_pass_down(place_id from, std::span<const std::byte> body);
  /// Sends the entries relayed during a delivery, one message per next place.
  void flush_relays() noexcept;
  void send_down(place_id to, place_id root, message_kind kind,
                 const std::vector<place_id>& targets, std::span<const std::byte> payload);
  void deliver(place_id as_from, message_kind kind, std::span<const std::byte> payload);

  message_dispatcher& m_dispatcher;
  place_id m_here;
  place_id m_places;
  place_id m_arity;
  message_kind m_kind_up;
  message_kind m_kind_down;
  tree_counters m_counters;
  /// Entries to relay, by next place (handler context only: the transport runs one handler
  /// at a time, and flush_relays runs after each delivery on the same thread).
  std::unordered_map<place_id, std::vector<std::byte>> m_relays;
  std::unordered_map<place_id, std::uint32_t> m_relay_counts;
};

} // namespace apgas::detail
