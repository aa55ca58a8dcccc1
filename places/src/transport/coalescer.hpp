// Per-destination coalescing of logical messages into network messages, shared by every
// transport (fake and MPI); it knows nothing of MPI.
//
// Framing: a network message is a sequence of frames, each a 32-bit length (native byte order:
// every place runs the same binary on the same kind of machine) followed by that many bytes.
// The length's top bit (k_routed_flag, routing.hpp) marks a routed frame, whose bytes start
// with its source and destination: lengths are below 2 GiB, so the bit is free.
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
#include "apgas/detail/spin_lock.hpp"
#include "apgas/detail/transport.hpp"

#include "routing.hpp"

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

/// @brief The frame starting at `offset`, advancing `offset` past it; `routed` says whether it
/// is a routed frame (its bytes start with a route_header).
/// pre: the network message was validated and offset < its size.
inline std::span<const std::byte> next_frame(std::span<const std::byte> network_message,
                                             std::size_t& offset, bool& routed) noexcept {
  std::uint32_t length;
  std::memcpy(&length, network_message.data() + offset, k_frame_header);
  routed = (length & k_routed_flag) != 0;
  length &= ~k_routed_flag;
  const std::span<const std::byte> frame = network_message.subspan(offset + k_frame_header, length);
  offset += k_frame_header + length;
  return frame;
}

/// @brief next_frame() for a caller that does not care whether the frame is routed.
inline std::span<const std::byte> next_frame(std::span<const std::byte> network_message,
                                             std::size_t& offset) noexcept {
  bool routed;
  return next_frame(network_message, offset, routed);
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

/// @brief Per-destination coalescing buffers with a flush interval and back-pressure accounting.
/// Thread-safety: append, seal, recycle, complete and the observers from any thread;
/// collect from one thread at a time (the caller serialises it).
class coalescer {
public:
  using clock = std::chrono::steady_clock;
  /// @brief Buffers kept for reuse per destination.
  static constexpr std::size_t k_pool_per_destination = 4;
  /// @brief Writes a message's body in place (transport::message_writer).
  using message_writer = void (*)(std::byte* at, const void* context) noexcept;

  /// @brief What collect() seals before handing out the sealed buffers.
  enum class seal_mode {
    none, ///< only buffers already sealed (full ones)
    due,  ///< also buffers whose flush interval (options::flush_us) has passed
    all,  ///< also every non-empty buffer (flush)
  };

  /// @brief The buffer per destination for `destinations` places: opts.coalesce_bytes, or
  /// less if the buffers of all destinations (one being filled and k_pool_per_destination kept
  /// for reuse each) would hold more than opts.coalesce_memory_mib MiB; never below
  /// k_min_fitted_buffer_bytes (nor above opts.coalesce_bytes).
  static std::size_t fitted_buffer_bytes(std::size_t destinations, const options& opts) noexcept;
  /// @brief The least a buffer is lowered to: a few dozen remote asyncs still travel together
  /// (at 65,536 places that is 320 MiB of buffers, over the default budget).
  static constexpr std::size_t k_min_fitted_buffer_bytes = 1024;
  /// @brief The buffer per destination in use (see fitted_buffer_bytes).
  std::size_t buffer_bytes() const noexcept { return m_buffer_bytes; }
  /// @brief Buffers for `destinations` places, with opts' coalescing buffer, flush interval,
  /// byte limit and coalescing switch; the buffer per destination is fitted for
  /// `buffered_destinations` of them (those this place sends to itself: fewer than
  /// `destinations` when messages are routed, see routing.hpp). Throws std::invalid_argument
  /// unless 0 < opts.coalesce_bytes < 2 GiB.
  coalescer(std::size_t destinations, const options& opts, std::size_t buffered_destinations);
  /// @brief Buffers for `destinations` places, each of which this place may send to.
  coalescer(std::size_t destinations, const options& opts)
      : coalescer(destinations, opts, destinations) {}
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
  /// @brief Appends a routed frame (routing.hpp) to the buffer of `hop`: `route`, then
  /// `message`, the length prefix flagged k_routed_flag. Counted as one logical message to
  /// `hop`. pre: hop < destinations(). Throws std::length_error if the frame would exceed
  /// k_max_message_bytes.
  appended_to append_routed(place_id hop, route_header route, std::span<const std::byte> message);
  /// @brief Appends a mergeable message: `head` followed by a body of `body_size` bytes that
  /// `write_body(at, context)` writes in place, under the buffer's lock (it must not throw nor
  /// call the coalescer). If the last frame of the buffer of `to` is a mergeable message with
  /// the same head (byte for byte) and the body fits in the buffer, only the body is appended,
  /// to that frame (its length grows): the receiver gets one message, the head followed by
  /// the bodies in order of appending. Otherwise the message starts a frame of its own (which
  /// later ones may grow). A frame becomes unmergeable once anything else is appended after
  /// it or its buffer is sealed, so merging never reorders messages. Counted as one logical
  /// message per call. pre: to < destinations(). Throws std::length_error as append().
  /// Inline: a stream of them merges without a call.
  appended_to append_merged(place_id to, const merge_head& head, std::size_t body_size,
                            message_writer write_body, const void* context) {
    slot& s = m_slots[to];
    {
      appended_to result;
      std::lock_guard lock(s.lock);
      if (try_merge_locked(s, k_direct, head, body_size, write_body, context, result)) [[likely]]
        return result;
    }
    return append_merged_framed(to, k_direct, head, body_size, write_body, context);
  }

  /// @brief append_merged() of a routed message (routing.hpp) into the buffer of `hop`: the
  /// frame is routed (`route`, then `head` and the body), and it merges only with a routed
  /// frame of the same route and head, so the destination gets the merged bodies of one
  /// source in one message, as from append_merged(). pre: hop < destinations().
  appended_to append_merged_routed(place_id hop, route_header route, const merge_head& head,
                                   std::size_t body_size, message_writer write_body,
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

  /// @brief Counts a frame of `message_bytes` to `to` as appended and outstanding, after the
  /// fact: for a frame sent alone without claim_alone() (nothing was outstanding to `to`) whose
  /// send did not complete at once. The caller calls complete() when it does, and must not let
  /// that happen before this call (the transport makes both under its network lock).
  void count_alone(place_id to, std::size_t message_bytes);

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
  /// One destination. Everything but the atomics is guarded by `lock`. In the header for
  /// append_merged's inline part. alignas(64): slots of different destinations are written
  /// by different threads.
  struct alignas(64) slot {
    // A spin lock: held for a copy of one message (or a buffer move), and almost never contended
    // (one sender per destination at a time, usually). It inlines to one atomic RMW and one
    // store, where a pthread mutex's lock and unlock are out-of-line library calls with two
    // atomic RMWs, on the path of every remote async.
    spin_lock lock;
    byte_buffer current;                ///< the buffer being filled
    std::uint32_t current_messages = 0; ///< logical messages in `current`
    clock::time_point due{};            ///< when `current` must leave (valid if non-empty)
    std::vector<sealed_buffer> ready;   ///< sealed, waiting for collect(), in sealing order
    std::vector<byte_buffer> pool;      ///< recycled buffers
    bool listed = false;                ///< in m_active or in collect()'s m_scan
    /// Bytes appended and bytes completed, since the start: the difference is what is
    /// outstanding (read as a hint: back-pressure, idle). Two counts rather than one that goes up
    /// and down: appended_bytes has one writer at a time (under `lock`), so appending costs a
    /// load and a store, not an atomic read-modify-write per message; completed_bytes is added
    /// to by whoever completes a send (any thread, no lock), once per network message.
    std::atomic<std::uint64_t> appended_bytes{0};
    std::atomic<std::uint64_t> completed_bytes{0};
    /// appended_bytes - completed_bytes, never negative. Any thread.
    std::uint64_t outstanding() const noexcept {
      // acquire: a completion seen here was of bytes whose append happened before it (and
      // before the completer's release), so the appended count read next includes them.
      const std::uint64_t done = completed_bytes.load(std::memory_order_acquire);
      // relaxed: see above; an append not seen yet only makes the answer a little low.
      return appended_bytes.load(std::memory_order_relaxed) - done;
    }
    /// Under `lock`: counts one more logical message of `frame_bytes`, at enqueue time, so
    /// that back-pressure and idle tests see it at once.
    void count_appended(std::uint64_t frame_bytes) noexcept {
      // relaxed: one writer at a time (the lock holder); the appending thread reads them back
      // right after (coherence), other readers use them as a hint or a statistic.
      appended_bytes.store(appended_bytes.load(std::memory_order_relaxed) + frame_bytes,
                           std::memory_order_relaxed);
      appended.store(appended.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    /// Logical messages appended; written under `lock`, read by stats() without it.
    std::atomic<std::uint64_t> appended{0};
    /// Where the length prefix of the last frame of `current` starts, if that frame is a
    /// mergeable message (append_merged) and nothing was appended after it; k_no_merge
    /// otherwise. Its merge_head follows the prefix (and its route, if it is routed).
    std::size_t merge_at = k_no_merge;
    /// The route of the frame at merge_at (route_key), or k_direct if it is not routed.
    std::uint64_t merge_route = k_direct;
    static constexpr std::size_t k_no_merge = std::numeric_limits<std::size_t>::max();
  };

  static constexpr std::int64_t k_never = std::numeric_limits<std::int64_t>::max();
  /// The merge key of a frame that is not routed: no route has it (a routed message never
  /// goes from a place to itself, so never from 0 to 0).
  static constexpr std::uint64_t k_direct = 0;
  /// The merge key of a routed frame: its source and destination (the urgent bit is not set
  /// on mergeable messages: send_merged is not send_now).
  static std::uint64_t route_key(route_header r) noexcept {
    return (std::uint64_t{r.source} << 32) | r.destination;
  }

  /// a == b in four word compares and one branch, inline: append_merged compares heads on
  /// every append, where a call to memcmp would cost more than the compare itself.
  static bool same_head(const std::byte* a, const merge_head& b) noexcept {
    static_assert(sizeof(merge_head) % sizeof(std::uint64_t) == 0);
    std::uint64_t differ = 0;
    for (std::size_t i = 0; i < b.size(); i += sizeof(std::uint64_t)) {
      std::uint64_t x;
      std::uint64_t y;
      std::memcpy(&x, a + i, sizeof x);
      std::memcpy(&y, b.data() + i, sizeof y);
      differ |= x ^ y;
    }
    return differ == 0;
  }
  /// append_merged's merge into the last frame of `s`, if it is a mergeable message with the
  /// same route key (`route`: k_direct or route_key) and head, and the body fits.
  /// pre: s.lock held. @return true if it appended.
  bool try_merge_locked(slot& s, std::uint64_t route, const merge_head& head, std::size_t body_size,
                        message_writer write_body, const void* context, appended_to& result) {
    // Only into the last frame, only with the same route and head, and only within a buffer's
    // size: a merged frame never makes a buffer larger than a full one. (A buffer started
    // without coalescing was sealed at once, so merge_at is set only in one started with it.)
    const std::size_t head_at = k_frame_header + (route == k_direct ? 0 : k_route_header);
    if (s.merge_at == slot::k_no_merge || s.merge_route != route ||
        s.current.size() + body_size > m_buffer_bytes ||
        !same_head(s.current.data() + s.merge_at + head_at, head))
      return false;
    std::byte* length_at = s.current.data() + s.merge_at;
    // <= m_buffer_bytes < 2 GiB, see the constructor, so adding to it keeps k_routed_flag.
    std::uint32_t length;
    std::memcpy(&length, length_at, k_frame_header);
    length += static_cast<std::uint32_t>(body_size);
    std::memcpy(length_at, &length, k_frame_header);
    write_body(s.current.extend(body_size), context);
    ++s.current_messages;
    s.count_appended(body_size);
    result.over_bytes = s.outstanding() > m_max_outstanding_bytes;
    // relaxed: see set_coalescing. Switched off since the buffer started: it leaves now, as
    // after any append without coalescing.
    if (!m_coalesce.load(std::memory_order_relaxed) || s.current.size() >= m_buffer_bytes)
        [[unlikely]] {
      seal_locked(s);
      result.sealed = true;
    }
    return true;
  }
  /// append_merged when the message does not merge: a frame of its own (out of line); routed
  /// (its route first) unless `route` is k_direct.
  appended_to append_merged_framed(place_id to, std::uint64_t route, const merge_head& head,
                                   std::size_t body_size, message_writer write_body,
                                   const void* context);

  void start_buffer_locked(place_id to, slot& s, std::size_t frame_bytes, bool coalesce);
  void seal_locked(slot& s);
  /// The body of append() and append_merged(), under the slot's lock: first
  /// `try_merge(slot&, appended_to&)` (true: it appended, done), else frames `size` bytes that
  /// `fill(at)` writes. `mergeable`: that frame is a mergeable message (its first bytes a
  /// merge_head, after its route if `merge_route` is not k_direct).
  template <class TryMerge, class Fill>
  appended_to append_frame_locked(place_id to, std::size_t size, TryMerge try_merge, Fill fill,
                                  bool mergeable, std::uint64_t merge_route = k_direct);
  void lower_next_due(clock::time_point due) noexcept;

  /// The buffer per destination: options::coalesce_bytes, fitted (see fitted_buffer_bytes).
  const std::size_t m_buffer_bytes;
  const clock::duration m_flush_interval;    ///< options::flush_us
  const std::size_t m_max_outstanding_bytes; ///< options::max_outstanding_bytes
  std::atomic<bool> m_coalesce;              ///< starts as options::coalesce (see set_coalescing)
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
