// Per-destination coalescing of logical messages into network messages, shared by every
// transport (fake and MPI); it knows nothing of MPI.
//
// Framing: a network message is a sequence of frames, each a 32-bit length (native byte order:
// every place runs the same binary on the same kind of machine) followed by that many bytes.
// Un-framing validates every length before anything is delivered, so a corrupt network message
// is rejected as a whole with an error instead of reading out of bounds. A frame may hold several
// logical messages merged into one (append_merged: one head, then their bodies); only the
// sender and the receiver of such messages know how to split them.
//
// Locking: one spin lock per destination (appends to different places never contend), plus a small
// list of "listed" destinations (those with buffered bytes) so that flushing and the
// flush_interval check visit only those, not every place. Lock order: slot -> active list.
// collect() is single-threaded by contract (the transport calls it under its network lock).
//
// Memory: sealed buffers come back through recycle() into a small per-destination pool, so the
// steady state allocates nothing per message (and nothing per buffer while at most
// k_pool_per_destination buffers per destination are in flight).
#pragma once

#include "apgas/detail/byte_buffer.hpp"
#include "apgas/detail/transport.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace apgas::detail {

/// @brief Largest logical message: a network message holding it must fit MPI's int count.
inline constexpr std::size_t k_max_message_bytes = 0x7fffffffu - k_frame_header;

/// @brief Where a network message stopped making sense.
struct frame_error {
  std::size_t offset;    ///< where the bad frame starts
  std::size_t claimed;   ///< the length it claims (0 if the header itself is cut)
  std::size_t remaining; ///< bytes left from `offset` to the end of the network message
};

/// @brief Appends the length prefix of a frame of `size` bytes to `out` and makes room for
/// them: returns where they go (to be written). pre: size <= k_max_message_bytes.
inline std::byte* start_frame(byte_buffer& out, std::size_t size) {
  const auto length = static_cast<std::uint32_t>(size);
  std::byte* at = out.extend(k_frame_header + size); // one capacity check
  std::memcpy(at, &length, k_frame_header);
  return at + k_frame_header;
}

/// @brief Appends one frame (length prefix + bytes) to `out`. pre: size <= k_max_message_bytes.
inline void append_frame(byte_buffer& out, std::span<const std::byte> message) {
  std::byte* at = start_frame(out, message.size());
  if (!message.empty()) std::memcpy(at, message.data(), message.size());
}

/// @brief Checks that `network_message` is a whole number of well-formed frames.
/// @return the first bad frame, or nothing if all frames are good.
std::optional<frame_error> validate_frames(std::span<const std::byte> network_message) noexcept;

/// @brief Number of frames of a validated network message.
std::size_t count_frames(std::span<const std::byte> network_message) noexcept;

/// @brief Human-readable description of a frame error, naming the source place.
std::string describe(const frame_error& error, place_id from);

/// @brief The frame starting at `offset`, advancing `offset` past it.
/// pre: the network message was validated and offset < its size.
inline std::span<const std::byte> next_frame(std::span<const std::byte> network_message,
                                             std::size_t& offset) noexcept {
  std::uint32_t length;
  std::memcpy(&length, network_message.data() + offset, k_frame_header);
  const std::span<const std::byte> frame = network_message.subspan(offset + k_frame_header, length);
  offset += k_frame_header + length;
  return frame;
}

/// @brief A buffer that left coalescing: one network message.
struct sealed_buffer {
  byte_buffer bytes;          ///< the frames
  std::uint32_t messages = 0; ///< logical messages inside
};

/// @brief A sealed buffer with its destination, as collect() hands it out.
struct outgoing_buffer {
  place_id to;
  sealed_buffer buffer;
};

/// @brief Per-destination coalescing buffers with flush_interval and back-pressure accounting.
/// Thread-safety: append, seal, recycle, complete and the observers from any thread;
/// collect from one thread at a time (the caller serialises it).
class coalescer {
public:
  using clock = std::chrono::steady_clock;
  /// @brief Buffers kept for reuse per destination.
  static constexpr std::size_t k_pool_per_destination = 4;

  /// @brief What collect() seals before handing out the sealed buffers.
  enum class seal_mode {
    none, ///< only buffers already sealed (full ones)
    due,  ///< also buffers whose flush_interval has passed
    all,  ///< also every non-empty buffer (flush)
  };

  /// @brief Buffers for `destinations` places. pre: options.buffer_bytes > 0.
  coalescer(std::size_t destinations, const transport_options& options);
  ~coalescer();
  coalescer(const coalescer&) = delete;
  coalescer& operator=(const coalescer&) = delete;

  /// @brief What an append did, for the caller's back-pressure.
  struct appended_to {
    bool sealed = false;     ///< a buffer was sealed (the caller may want to collect soon)
    bool over_bytes = false; ///< `to` has more than max_outstanding_bytes outstanding now
  };
  /// @brief Appends a framed copy of `message` to the buffer of `to`; seals the buffer when it
  /// is full (or always, without coalescing). pre: to < destinations().
  /// Throws std::length_error if message.size() > k_max_message_bytes.
  appended_to append(place_id to, std::span<const std::byte> message);
  /// @brief Appends a mergeable message: `head` followed by a body of `body_size` bytes that
  /// `write_body(at, context)` writes in place, under the buffer's lock (it must not throw nor
  /// call the coalescer). If the last frame of the buffer of `to` is a mergeable message with
  /// the same head (byte for byte) and the body fits in the buffer, only the body is appended,
  /// to that frame (its length grows): the receiver gets one message, the head followed by
  /// the bodies in order of appending. Otherwise the message starts a frame of its own (which
  /// later ones may grow). A frame becomes unmergeable once anything else is appended after
  /// it or its buffer is sealed, so merging never reorders messages. Counted as one logical
  /// message per call. pre: to < destinations(). Throws std::length_error as append().
  appended_to append_merged(place_id to, const merge_head& head, std::size_t body_size,
                            void (*write_body)(std::byte* at, const void* context) noexcept,
                            const void* context);

  /// @brief If nothing is buffered or sealed for `to`, frames `message` alone in a buffer
  /// (from the pool of `to`) and returns it, counted as appended and outstanding, for the
  /// caller to hand to the network at once (then complete() and recycle() as for a collected
  /// buffer). Otherwise returns nothing and appends nothing: the caller appends as usual,
  /// behind what is buffered. Per-destination order is the caller's business (the transport
  /// calls it under its network lock, which collect() also needs).
  /// Throws std::length_error as append().
  std::optional<sealed_buffer> take_alone(place_id to, std::span<const std::byte> message);

  /// @brief take_alone() for a frame the caller already holds whole (transport::send_now_framed):
  /// if nothing is buffered or sealed for `to`, counts a frame of `message_bytes` as appended
  /// and outstanding, and returns true; the caller hands it to the network at once and calls
  /// complete() when the send completes. Otherwise returns false and counts nothing.
  /// Throws std::length_error as append().
  bool claim_alone(place_id to, std::size_t message_bytes);

  /// @brief Coalescing on or off for later appends (see transport::set_coalescing).
  void set_coalescing(bool on) noexcept {
    // relaxed: appends read it as they come; one that misses the change by a few messages is
    // as good as one made just before the call.
    m_coalesce.store(on, std::memory_order_relaxed);
  }

  /// @brief Seals the buffer of `to` if it is not empty. @return true if it sealed one.
  bool seal(place_id to);

  /// @brief Cheap test: would collect(mode, now) find anything to hand out? (For
  /// seal_mode::all: is anything buffered at all.) May err towards "yes", never lastingly
  /// towards "no" for buffers appended by this thread or by threads it synchronised with.
  bool collect_pending(seal_mode mode, clock::time_point now) const noexcept;
  /// @brief Cheaper still, and without the time: false if nothing is buffered or sealed (then
  /// collect_pending is false too, whatever the time). Saves a clock read per idle poll.
  bool anything_buffered() const noexcept {
    // relaxed: hints, as in collect_pending.
    return m_ready.load(std::memory_order_relaxed) != 0 ||
           m_listed.load(std::memory_order_relaxed) != 0;
  }

  /// @brief Seals per `mode`, then moves every sealed buffer to `out`, in per-destination order
  /// of sealing. pre: one caller at a time. @return the number of buffers appended to `out`.
  std::size_t collect(seal_mode mode, clock::time_point now, std::vector<outgoing_buffer>& out);

  /// @brief Gives a buffer back to the pool of `to` once the network is done with it.
  void recycle(place_id to, byte_buffer&& buffer);

  /// @brief The network took `bytes` of frames to `to` (a send completed, or loopback delivery).
  void complete(place_id to, std::size_t bytes) noexcept;

  /// @brief Bytes appended to `to` and not yet completed (buffered, sealed or in flight).
  std::uint64_t outstanding(place_id to) const noexcept;

  /// @brief Sealed buffers not yet collected, over all destinations. A hint (relaxed): exact
  /// for the calling thread's own seals and whatever it synchronised with.
  std::size_t sealed_buffers() const noexcept;

  /// @brief True if no destination has outstanding bytes.
  bool idle() const noexcept;

  /// @brief Logical messages appended so far, over all destinations.
  std::uint64_t appended_messages() const noexcept;

  /// @brief Number of destinations.
  std::size_t destinations() const noexcept { return m_destinations; }

private:
  struct slot;
  static constexpr std::int64_t k_never = std::numeric_limits<std::int64_t>::max();

  void start_buffer_locked(place_id to, slot& s, std::size_t frame_bytes, bool coalesce);
  void seal_locked(slot& s);
  /// The body of append() and append_merged(), under the slot's lock: first
  /// `try_merge(slot&, appended_to&)` (true: it appended, done), else frames `size` bytes that
  /// `fill(at)` writes. `mergeable`: that frame is a mergeable message (its first bytes a
  /// merge_head).
  template <class TryMerge, class Fill>
  appended_to append_frame_locked(place_id to, std::size_t size, TryMerge try_merge, Fill fill,
                                  bool mergeable);
  void lower_next_due(clock::time_point due) noexcept;

  const transport_options m_options;
  std::atomic<bool> m_coalesce; ///< starts as m_options.coalesce (see set_coalescing)
  const std::size_t m_destinations;
  std::unique_ptr<slot[]> m_slots;

  /// Sealed buffers not yet collected, over all destinations. Written under slot locks; read
  /// without one as a hint by collect_pending().
  std::atomic<std::size_t> m_ready{0};
  /// Listed destinations (slot.listed == true). Changed under slot locks; read as a hint. A
  /// relaxed load still sees every change that happens-before it (coherence), which covers
  /// the thread that appended and whoever synchronised with it.
  std::atomic<std::size_t> m_listed{0};
  /// Earliest due time (ns since the clock's epoch) of a listed non-empty buffer, or k_never.
  /// Never later than the truth (see collect()); may be earlier (a spurious scan).
  std::atomic<std::int64_t> m_next_due{k_never};

  std::mutex m_active_lock;       ///< guards m_active
  std::vector<place_id> m_active; ///< listed destinations (guarded by m_active_lock)
  std::vector<place_id> m_scan;   ///< collect()'s copy of m_active (collect only)
};

} // namespace apgas::detail
