// What every transport shares: send() through the coalescer with back-pressure, flush(), and a
// re-entrant poll() that delivers logical messages in per-source order. A concrete transport
// supplies only the network: how a sealed buffer leaves, how sends complete, how network
// messages arrive (fake_transport.cpp, mpi_transport.cpp). Internal to places/src/transport.
//
// Two limits bound what a place has outstanding (both apgas::options): max_outstanding_bytes per
// destination (memory) and max_outstanding_sends network messages per transport (MPI requests,
// whose completion cost grows with their number). The second is enforced where buffers meet the
// network: drain_locked() hands at most that many to net_send() at a time and queues the rest, in
// order, in m_deferred until sends complete (network_done()). send() applies back-pressure on both.
//
// Routing (routing.hpp): beyond options::route_above places, send() puts a message for a place
// outside this place's row and column of the grid into the buffer of an intermediate place, as
// a routed frame; deliver() forwards a routed frame that is not for this place to its
// destination instead of delivering it, coalesced with what this place sends there itself; an
// urgent one (send_now) leaves at the end of the poll that received it.
//
// Locks, in the order they may be taken:
//   m_poll_lock  one poller at a time (try-lock); it owns m_pending and the delivery cursor.
//   m_net_lock   one thread at a time talks to the network (MPI_THREAD_SERIALIZED); held only
//                for short network operations, never while a handler runs.
//   coalescer slot locks, then its active-list lock.
// The first two are spin locks (which yield the core after a short spin): an idle worker takes
// both on every poll, whose length decides how soon a message is seen, and a spin lock inlines
// to one atomic RMW and one store where a pthread mutex's lock and unlock are out-of-line
// library calls with two atomic RMWs.
#pragma once

#include "apgas/detail/spin_lock.hpp"
#include "apgas/detail/trace.hpp"
#include "apgas/detail/transport.hpp"

#include "coalescer.hpp"
#include "routing.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace apgas::detail {

/// @brief Shared implementation of transport over an abstract network.
/// Thread-safety: as transport; the net_* hooks are called with m_net_lock held.
class transport_base : public transport {
public:
  place_id here() const noexcept override { return m_here; }
  place_id places() const noexcept override { return m_places; }
  void send(place_id to, std::span<const std::byte> message) override;
  void send_merged(place_id to, const merge_head& head, std::size_t body_size,
                   message_writer write_body, const void* context) override;
  void send_now(place_id to, std::span<const std::byte> message) override;
  void send_now_framed(place_id to, std::vector<std::byte>& framed) override;
  void flush() override;
  void set_coalescing(bool on) override { m_coalescer.set_coalescing(on); }
  std::size_t poll() override;
  void set_handler(handler h) override { m_handler = std::move(h); }
  void set_batch_end_handler(batch_end_handler h) override { m_batch_end = std::move(h); }
  bool quiescent() const override;
  transport_stats stats() const override;

protected:
  /// @brief Where a received network message came from (decides how its buffer is released).
  enum class origin : std::uint8_t { network, loopback, injected };
  /// @brief A network message waiting for delivery.
  struct received {
    place_id from = 0;
    byte_buffer bytes;
    origin kind = origin::network;
  };

  /// @brief Place `here` of `places`, with opts' coalescing and limits. Throws
  /// std::invalid_argument unless here < places and opts.max_outstanding_sends >= 1.
  transport_base(place_id here, place_id places, const options& opts);
  ~transport_base() override = default;

  /// @brief Hands one sealed buffer to the network. pre: to != here(); m_net_lock held.
  /// The implementation calls m_coalescer.complete(to, size) once the network is done with it.
  virtual void net_send(place_id to, sealed_buffer&& buffer) = 0;
  /// @brief What net_send_framed() did with the vector it was given.
  enum class framed_send : std::uint8_t {
    done,   ///< the send completed at once; the vector is the caller's again
    copied, ///< the network copied it and sends the copy; the vector is the caller's again
    kept,   ///< the network moved it out and keeps it until the send completes
  };
  /// @brief Hands one framed message (its length prefix written) to the network, as net_send()
  /// a buffer of one frame. Its bytes are counted as appended (coalescer::claim_alone) if
  /// `counted`. If not (nothing was outstanding to `to`, see send_now_framed), the
  /// implementation counts them (count_framed_alone) unless the send completes at once, and
  /// counts a send that does as a logical message (count_sent_uncounted_locked).
  /// done: counted as sent (count_sent_locked and, if counted, m_coalescer.complete). kept:
  /// counted in flight (count_issue_locked); the network will call network_done() and
  /// recycle_framed(). copied: the accounting of net_send(), which this default does.
  /// pre: to != here(); m_net_lock held.
  virtual framed_send net_send_framed(place_id to, std::vector<std::byte>& framed, bool counted);
  /// @brief Completes finished sends (complete + recycle). pre: m_net_lock held.
  virtual void net_complete_sends() = 0;
  /// @brief Takes network messages that arrived and passes each to accept().
  /// pre: m_net_lock held, called by the poll owner.
  virtual void net_receive() = 0;
  /// @brief Gives back the buffer of a delivered network or injected message. Poll owner only.
  virtual void net_release(received&& message) = 0;

  /// @brief Queues a received network message for delivery. pre: m_net_lock held, poll owner.
  void accept(received&& message);

  /// @brief The network is done with a buffer of `bytes` towards `to` that net_send() was
  /// given (its send completed): releases its bytes and its place under max_outstanding_sends.
  /// Exactly once per net_send(). Any thread.
  void network_done(place_id to, std::size_t bytes) noexcept;

  /// @brief Counts a network message handed to the network (statistics, and one more in
  /// flight under max_outstanding_sends until network_done()). pre: m_net_lock held.
  void count_issue_locked(std::size_t bytes);
  /// @brief Counts a network message sent (statistics only: for one that completed at once,
  /// never in flight). pre: m_net_lock held.
  void count_sent_locked(std::size_t bytes) noexcept;
  /// With tracing on: a network message to `to` of `frames` logical messages left (under
  /// m_net_lock, which orders the sequence numbers as MPI orders the messages).
  /// `bytes` are the frames (the first one's kind is recorded). Call as
  /// `if (g_trace_on) [[unlikely]] trace_sent_locked(...)`.
  void trace_sent_locked(place_id to, std::span<const std::byte> bytes,
                         std::uint32_t frames) noexcept;

  /// @brief For net_send_framed() given an uncounted frame that it keeps in flight: counts it as
  /// appended, before anything can complete it. pre: m_net_lock held.
  void count_framed_alone(place_id to, std::size_t framed_bytes) {
    m_coalescer.count_alone(to, framed_bytes - k_frame_header);
  }
  /// @brief For net_send_framed() given an uncounted frame whose send completed at once: one
  /// more logical message sent (statistics). pre: m_net_lock held.
  void count_sent_uncounted_locked() noexcept {
    // relaxed, a load and a store: a statistic with one writer (we hold m_net_lock).
    m_sent_uncounted.store(m_sent_uncounted.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
  }

  /// @brief Keeps a vector that net_send_framed() was given, once its send completed, for a
  /// later send_now_framed() to give its caller in exchange. pre: m_net_lock held.
  void recycle_framed(std::vector<std::byte>&& framed);

  /// @brief True if sealed buffers wait for room under max_outstanding_sends.
  /// pre: m_net_lock held.
  bool has_deferred_locked() const noexcept { return m_deferred_head < m_deferred.size(); }

  /// @brief Hands waiting buffers to the network, oldest first, while in-flight sends are below
  /// max_outstanding_sends. pre: m_net_lock held.
  void issue_deferred_locked();

  /// @brief flush(), then polls until no sealed buffer waits for room: everything sent before
  /// the call has been handed to the network (what a barrier promises). pre: not from a handler.
  void flush_to_network();

  /// @brief Progress without delivery: seal per `mode`, send, complete sends, and (poll owner
  /// only) receive. Takes m_net_lock.
  void progress(coalescer::seal_mode mode, bool receive);

  const place_id m_here;
  const place_id m_places;
  const std::size_t m_max_outstanding_bytes; ///< options::max_outstanding_bytes
  const std::size_t m_max_outstanding_sends; ///< options::max_outstanding_sends
  const route_grid m_routes;                 ///< options::route_above's grid
  coalescer m_coalescer;
  spin_lock m_net_lock;

private:
  void drain_locked(coalescer::seal_mode mode);
  /// send()'s and send_merged()'s end: hands a sealed buffer over, applies back-pressure.
  void after_append(place_id to, coalescer::appended_to appended);
  void issue_locked(outgoing_buffer&& out);
  /// send_now()'s and send_now_framed()'s common part: `take_alone` tries to hand the message
  /// to the network alone (under m_net_lock); if it cannot, the message is appended and flushed.
  template <class TakeAlone>
  void send_now_with(place_id to, std::span<const std::byte> message, TakeAlone take_alone);
  bool try_progress_sends();
  bool over_limits(place_id to) const noexcept;
  void wait_for_room(place_id to);
  std::size_t deliver();
  void finish_current();
  /// A routed frame: delivered with its source if it is for here, else forwarded (deliver()).
  void route_frame(std::span<const std::byte> frame);
  /// Seals and hands over the buffers route_frame() forwarded urgent frames into (the end of
  /// deliver()).
  void send_forwarded();
  /// send()'s part for a message that goes through an intermediate place `hop`; `urgent`: it
  /// leaves the intermediate at once (see routing.hpp).
  void send_routed(place_id hop, place_id to, std::span<const std::byte> message, bool urgent);

  spin_lock m_poll_lock;
  /// The thread inside poll(), or none. Only that thread stores its own id here (and clears it
  /// before unlocking m_poll_lock), so a thread reading its own id knows it is nested inside
  /// its own poll; any other value, stale or not, is not its id. Hence relaxed is enough.
  std::atomic<std::thread::id> m_poll_owner{};
  handler m_handler;             ///< set before the first poll, then read by the poll owner only
  batch_end_handler m_batch_end; ///< likewise; may be empty

  // Guarded by m_net_lock.
  std::vector<outgoing_buffer> m_outgoing; ///< collect() output, reused
  std::vector<received> m_loopback;        ///< sealed buffers to here(), not yet accepted
  /// Sealed remote buffers waiting for room under max_outstanding_sends, in the order collect()
  /// handed them out (so per-destination order holds): m_deferred[m_deferred_head..]. A vector
  /// with a head index, as m_pending.
  std::vector<outgoing_buffer> m_deferred;
  std::size_t m_deferred_head = 0;
  /// Vectors of completed net_send_framed() sends, given back to send_now_framed() callers.
  std::vector<std::vector<std::byte>> m_framed_pool;

  // Poll owner only.
  // Received, not yet delivered, in arrival order: m_pending[m_pending_head..]. A vector with a
  // head index rather than a deque, which would allocate and free blocks as it moves along.
  std::vector<received> m_pending;
  std::size_t m_pending_head = 0;
  received m_current; ///< the network message being delivered
  /// Places route_frame() forwarded urgent frames to since the last send_forwarded(), each once.
  std::vector<place_id> m_forwarded_to;
  bool m_has_current = false;
  std::size_t m_offset = 0; ///< next frame of m_current

  // Tracing (options::trace), guarded by m_net_lock: network messages sent to each place and
  // received from each, in order, so that the n-th send to p and p's n-th receive from us
  // name the same arrow. Sized at construction if tracing, else empty (never traced).
  std::vector<std::uint64_t> m_trace_sent;
  std::vector<std::uint64_t> m_trace_received;

  // Statistics: relaxed atomics (counters nobody synchronises on). Single writer each (under
  // m_net_lock or the poll owner), except backpressure_waits.
  std::atomic<std::size_t> m_pending_count{0}; ///< m_pending + m_current, for quiescent()
  std::atomic<std::uint64_t> m_mpi_sent{0};
  std::atomic<std::uint64_t> m_mpi_received{0};
  std::atomic<std::uint64_t> m_bytes_sent{0};
  std::atomic<std::uint64_t> m_bytes_received{0};
  std::atomic<std::uint64_t> m_logical_received{0};
  std::atomic<std::uint64_t> m_backpressure_waits{0};
  std::atomic<std::uint64_t> m_peak_in_flight{0}; ///< written under m_net_lock
  /// Frames sent by send_now_framed() without being counted by the coalescer (see there), whose
  /// send completed at once; written under m_net_lock. Added to the logical messages sent.
  std::atomic<std::uint64_t> m_sent_uncounted{0};
  /// Routed frames forwarded by this place (appended to its coalescer, but not sent by it):
  /// written by the poll owner only.
  std::atomic<std::uint64_t> m_forwarded{0};

  // Send-request accounting. Neither publishes data: the buffers themselves travel through the
  // network, the coalescer's locks and its release/acquire byte counts. These are counts a
  // sender compares with max_outstanding_sends, so relaxed is enough (a stale value delays
  // a decision to the next check, and every wait loop checks again after making progress).
  /// Handed to net_send() and not yet network_done(). Incremented under m_net_lock; decremented
  /// by whoever completes a send (in the fake network, the receiving endpoint's thread).
  std::atomic<std::size_t> m_in_flight{0};
  /// m_deferred.size() - m_deferred_head; written under m_net_lock, read without it as a hint.
  std::atomic<std::size_t> m_deferred_count{0};
};

} // namespace apgas::detail
