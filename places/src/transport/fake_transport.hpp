// An in-process network of N places, for unit tests of protocols without mpiexec. Each place is
// a transport endpoint with the same coalescing, back-pressure and statistics as over MPI.
// With reordering on, network messages from different sources arrive in a random (seeded)
// order, and optionally even network messages from the same source, so that a protocol can be
// tested against arrival orders MPI allows (different sources) and ones it does not (same
// source: useful to show a protocol does not depend on FIFO).
//
// Timing: a network message is "in flight" (counted against max_outstanding_bytes and, as one
// send request, against max_outstanding_sends) until the destination endpoint's poll() takes
// it, so a receiver that polls slowly applies back-pressure to its senders. A sender waiting for
// room therefore needs someone to poll the destination: drive each endpoint from its own thread,
// or, single-threaded, stay below the limit and use poll_all().
#pragma once

#include "apgas/detail/transport.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace apgas::detail {

/// @brief N places in one process, connected by in-memory queues.
/// Thread-safety: endpoints may be used from any threads (as any transport); the network object
/// itself must outlive them and is not copied or moved.
class fake_network {
public:
  /// @brief A network of `places` endpoints.
  /// @param opts the coalescing and the limits of every endpoint.
  /// @param seed seeds the reordering (the same arrivals then give the same delivery order).
  /// @param reorder deliver network messages from different sources in random order.
  /// @param reorder_same_source also reorder network messages from one source (breaks FIFO).
  explicit fake_network(std::size_t places, const options& opts = {}, std::uint64_t seed = 1,
                        bool reorder = false, bool reorder_same_source = false);
  ~fake_network();
  fake_network(const fake_network&) = delete;
  fake_network& operator=(const fake_network&) = delete;

  /// @brief The endpoint of place `p`. pre: p < places().
  transport& endpoint(place_id p);
  /// @brief Number of places.
  place_id places() const noexcept;

  /// @brief Polls every endpoint once (a single-threaded test driving the whole network).
  /// @return messages delivered in total.
  std::size_t poll_all();

  /// @brief Test hook: queues raw bytes as a network message from `from` to `to`, bypassing
  /// framing (to test corrupt-frame handling). Not counted against back-pressure.
  void inject(place_id from, place_id to, std::span<const std::byte> raw);

  /// @brief High-water mark of network-message bytes queued towards `to` and not yet taken by
  /// its poll (shows that back-pressure bounds memory).
  std::uint64_t peak_queued_bytes(place_id to) const;

  /// @brief High-water mark of network messages from `from` queued towards `to` and not yet
  /// taken by its poll: the fake's "live send requests" (shows that max_outstanding_sends
  /// bounds them). Injected messages are not counted.
  std::size_t peak_queued_messages(place_id from, place_id to) const;

  struct impl;

private:
  std::unique_ptr<impl> m_impl;
};

} // namespace apgas::detail
