// The transport: how one place hands bytes to another. It is the only layer that talks to MPI;
// everything above it (active messages, distributed finish, clocks, GLB) sees this interface,
// so that protocols can be unit-tested on the in-process fake network and run unchanged over
// MPI. The implementations and their factories are private to places/src/transport
// (fake_transport.hpp, mpi_transport.hpp, single_place_transport.hpp; MPI's start and end in
// mpi_process.hpp): only this interface is public.
//
// A *logical* message is what send() is given; a *network* message is what leaves the place:
// several logical messages gathered per destination (coalescing, see coalescer.hpp), because
// per-message software overhead is what kills fine-grained runtimes over MPI (HPX #429, #6105).
#pragma once

#include "apgas/options.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace apgas::detail {

class collective_network;
class rma_network;

/// @brief Index of a place (an MPI rank of the runtime's communicator).
using place_id = std::uint32_t;

/// @brief Bytes of the length prefix of each frame (a logical message inside a network
/// message). send_now_framed() takes messages written behind room for it.
inline constexpr std::size_t k_frame_header = sizeof(std::uint32_t);

/// @brief The head of a mergeable message (transport::send_merged): a fixed size, so that the
/// coalescer compares two heads in four word compares, without a call to memcmp. Bytes the
/// sender does not need must be zero (they travel too).
using merge_head = std::array<std::byte, 32>;

/// @brief Counters of a transport. Loopback traffic (to here()) counts as logical messages
/// only: it never becomes an MPI message. Coalescing ratio = logical / mpi (remote traffic).
struct transport_stats {
  std::uint64_t logical_messages_sent = 0; ///< send() calls, counted when enqueued
  /// Handler calls: a merged message (send_merged) counts once, however many it holds.
  std::uint64_t logical_messages_received = 0;
  std::uint64_t mpi_messages_sent = 0;     ///< network messages to other places
  std::uint64_t mpi_messages_received = 0; ///< network messages from other places
  std::uint64_t bytes_sent = 0;            ///< network bytes (frames included)
  std::uint64_t bytes_received = 0;        ///< network bytes (frames included)
  std::uint64_t backpressure_waits = 0;    ///< send() calls that had to wait for room
  /// High-water mark of network messages handed to the network and not yet completed (live
  /// MPI send requests); never above options::max_outstanding_sends.
  std::uint64_t peak_sends_in_flight = 0;
  /// The coalescing buffer per destination in use: options::coalesce_bytes, or less at many
  /// places (see options::coalesce_memory_mib).
  std::uint64_t buffer_bytes = 0;
  /// Routed messages this place forwarded as the intermediate (options::route_above): not
  /// counted as sent or received by it, but in its network messages and bytes.
  std::uint64_t forwarded_messages = 0;
};

/// @brief A transport failure: an MPI error, or a corrupt network message.
class transport_error : public std::runtime_error {
public:
  explicit transport_error(const std::string& what) : std::runtime_error(what) {}
};

/// @brief Message passing between places with per-destination coalescing.
/// Thread-safety: every member may be called from any thread unless stated otherwise.
class transport {
public:
  /// @brief Called once per logical message, in per-source order of sending. The span is valid
  /// only during the call and has no particular alignment (copy out with memcpy).
  using handler = std::function<void(place_id from, std::span<const std::byte> message)>;

  virtual ~transport() = default;

  /// @brief This place.
  virtual place_id here() const noexcept = 0;
  /// @brief Number of places.
  virtual place_id places() const noexcept = 0;

  /// @brief Appends one logical message (a copy) to the coalescing buffer of `to`.
  /// The buffer leaves as one network message when full, on flush(), or once options::flush_us
  /// have passed (checked in poll()). If more than options::max_outstanding_bytes to `to` are
  /// outstanding, or more than options::max_outstanding_sends network messages (to any place)
  /// are sealed and not yet completed, send() makes progress itself (it keeps receiving and
  /// delivering) until below the limits.
  /// pre: to < places(); message.size() < 2 GiB. `to` may be here() (loopback, no MPI).
  /// Throws std::out_of_range / std::length_error when the precondition is violated; while
  /// waiting for room it polls, so poll()'s exceptions may also come out of send().
  virtual void send(place_id to, std::span<const std::byte> message) = 0;

  /// @brief Writes `size` bytes of a message in place: at `to`, from `context`. Must not throw
  /// nor call the transport (it may run under a coalescing buffer's lock).
  using message_writer = void (*)(std::byte* to, const void* context) noexcept;

  /// @brief Like send(), for a message `head` + body whose body (`body_size` bytes) `write_body`
  /// writes straight into the coalescing buffer, without a staging copy (a remote async of
  /// bitwise arguments), and which may be merged: if the last message buffered for `to` was
  /// sent by send_merged with the same head, and its buffer has room, the transport appends
  /// only the body to it. The receiver's handler then gets one message, the head followed by
  /// every merged body in order (the head must say how to split them). Messages are never
  /// reordered: anything else sent to `to` in between starts a new message. Same
  /// preconditions and exceptions as send().
  virtual void send_merged(place_id to, const merge_head& head, std::size_t body_size,
                           message_writer write_body, const void* context) = 0;

  /// @brief Like send(), for a message somebody waits for (an `at` request or its reply): it
  /// leaves at once, behind whatever was buffered for `to` before it. When nothing is buffered
  /// for `to`, it leaves alone, without going through the coalescing buffer (saves the
  /// buffer's bookkeeping on the latency path). Same preconditions and exceptions as send().
  virtual void send_now(place_id to, std::span<const std::byte> message) {
    send(to, message);
    flush();
  }

  /// @brief send_now() of the message framed[k_frame_header..]: the first k_frame_header bytes
  /// are room for the transport's frame header (their value does not matter). The message
  /// then leaves from `framed` itself, without a copy, when nothing is buffered for `to`. A
  /// transport that must keep the bytes until its send completes (a big message) takes the
  /// vector and leaves another in its place (empty, of any capacity). pre: framed.size() >=
  /// k_frame_header. Same exceptions as send().
  virtual void send_now_framed(place_id to, std::vector<std::byte>& framed) {
    send_now(to, std::span<const std::byte>(framed).subspan(k_frame_header));
  }

  /// @brief Turns coalescing on or off for the messages sent from now on (options::coalesce at
  /// start). What is buffered stays buffered until it leaves as usual.
  virtual void set_coalescing(bool on) { (void)on; }

  /// @brief Sends every non-empty buffer now (a place going idle, a finish about to wait).
  /// With max_outstanding_sends network messages already in flight, the buffers it seals leave
  /// in order as earlier sends complete (every later flush() and poll() hands over more).
  virtual void flush() = 0;

  /// @brief Makes progress: sends due buffers, completes finished sends, receives what arrived
  /// and calls the handler once per logical message. Only one thread at a time does the work
  /// (try-lock: the others return 0 at once). Re-entrant: a handler may call send(), flush()
  /// or poll() (a nested poll makes network progress but delivers nothing; the outer one will).
  /// @return the number of logical messages delivered.
  /// Throws transport_error on a corrupt network message (the next poll goes on with the next
  /// one) and propagates an exception thrown by the handler (the next poll goes on with the
  /// message after the one that threw).
  virtual std::size_t poll() = 0;

  /// @brief Installs the handler. pre: before the first poll(); not concurrently with poll().
  virtual void set_handler(handler h) = 0;

  /// @brief Called after each run of handler calls (the messages one poll delivered), on the
  /// same thread, also when a handler threw: lets the handler side apply in one step what it
  /// gathered over several messages. pre: as set_handler.
  using batch_end_handler = std::function<void()>;
  virtual void set_batch_end_handler(batch_end_handler h) = 0;

  /// @brief True if nothing is buffered, nothing is in flight (sends completed) and nothing
  /// received is waiting for delivery. A hint for idle detection, not a termination test.
  virtual bool quiescent() const = 0;

  /// @brief True if every message this transport delivers comes from a send() on this
  /// process (one place, loopback only): a place with nothing buffered then needs no timed
  /// polls, only a wake-up after each send (see set_send_hook).
  virtual bool loopback_only() const noexcept { return false; }

  /// @brief For a loopback_only() transport: `hook` runs on the sending thread after each
  /// send() (after the message is buffered). pre: as set_handler. Others ignore it.
  virtual void set_send_hook(std::function<void()> hook) { (void)hook; }

  /// @brief Counters; approximate while other threads use the transport.
  virtual transport_stats stats() const = 0;

  /// @brief Teams and collectives over this network (see collective_network.hpp), or null if
  /// it has none (the in-process fake network of the protocols' unit tests).
  virtual collective_network* collectives() noexcept { return nullptr; }
  /// @brief One-sided access to registered memory over this network (see
  /// collective_network.hpp), or null if it has none.
  virtual rma_network* rma() noexcept { return nullptr; }

  /// @brief Collective: every place calls it once per round; returns when all did. Flushes
  /// first, waits until the network has taken every sealed buffer (see max_outstanding_sends),
  /// and keeps polling (calling the handler) while it waits. pre: not from a handler.
  virtual void barrier() = 0;

  /// @brief Collective, like barrier(): every place gives one value and gets every place's, in
  /// place order, once all gave theirs (polling meanwhile). The runtime's start-up checks with
  /// it that every place runs the same build. The default serves a transport of one place.
  /// pre: not from a handler. Throws std::logic_error for several places if not overridden.
  virtual std::vector<std::uint64_t> all_gather(std::uint64_t value) {
    if (places() != 1) throw std::logic_error("apgas: this transport has no all_gather");
    return {value};
  }
};

} // namespace apgas::detail
