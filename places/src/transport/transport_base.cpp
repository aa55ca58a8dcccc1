// Shared transport logic (see transport_base.hpp).
#include "transport_base.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace apgas::detail {

namespace {
// relaxed increment of a statistic with a single writer at a time.
void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}
} // namespace

transport_base::transport_base(place_id here, place_id places, const options& opts)
    : m_here(here), m_places(places), m_max_outstanding_bytes(opts.max_outstanding_bytes),
      m_max_outstanding_sends(opts.max_outstanding_sends), m_routes(places, opts.route_above),
      m_coalescer(places, opts, m_routes.peers(here < places ? here : 0) + 1) {
  if (here >= places) throw std::invalid_argument("apgas transport: here >= places");
  if (opts.max_outstanding_sends == 0)
    throw std::invalid_argument("apgas transport: max_outstanding_sends must be at least 1");
  if (!opts.trace.empty()) {
    m_trace_sent.assign(places, 0);
    m_trace_received.assign(places, 0);
  }
}

// ---- sending --------------------------------------------------------------------------------

namespace {
// Out of line and cold (see coalescer.cpp's throw_too_long).
[[noreturn, gnu::cold, gnu::noinline]] void throw_bad_destination(place_id to, place_id places) {
  throw std::out_of_range("apgas transport: send to place " + std::to_string(to) + " of " +
                          std::to_string(places));
}
} // namespace

void transport_base::send(place_id to, std::span<const std::byte> message) {
  if (to >= m_places) throw_bad_destination(to, m_places);
  const place_id hop = m_routes.next_hop(m_here, to);
  if (hop != to) [[unlikely]]
    return send_routed(hop, to, message, false);
  after_append(to, m_coalescer.append(to, message));
}

void transport_base::send_routed(place_id hop, place_id to, std::span<const std::byte> message,
                                 bool urgent) {
  after_append(hop, m_coalescer.append_routed(hop, route_header{m_here, to, urgent}, message));
}

void transport_base::send_merged(place_id to, const merge_head& head, std::size_t body_size,
                                 message_writer write_body, const void* context) {
  if (to >= m_places) throw_bad_destination(to, m_places);
  const place_id hop = m_routes.next_hop(m_here, to);
  if (hop != to) [[unlikely]] {
    // Merged in the intermediate's buffer with the previous routed message if it has the
    // same source, destination and head: the intermediate forwards the merged frame whole.
    return after_append(hop,
                        m_coalescer.append_merged_routed(hop, route_header{m_here, to, false}, head,
                                                         body_size, write_body, context));
  }
  after_append(to, m_coalescer.append_merged(to, head, body_size, write_body, context));
}

void transport_base::after_append(place_id to, coalescer::appended_to appended) {
  // A full buffer leaves at once if the network is free; otherwise the current holder of the
  // network lock, or the next poll, sends it (never block a sender on the network).
  if (appended.sealed) try_progress_sends();
  // The bytes limit is checked at every append (the coalescer did, under its lock); the count
  // of network messages grows only when a buffer is sealed, so it is checked then.
  if (appended.over_bytes || (appended.sealed && over_limits(to))) wait_for_room(to);
}

namespace {
/// Vectors kept for send_now_framed() callers, and the largest capacity kept (memory bound).
constexpr std::size_t k_framed_pool = 4;
constexpr std::size_t k_framed_pool_max_capacity = std::size_t{1} << 20;
} // namespace

template <class TakeAlone>
void transport_base::send_now_with(place_id to, std::span<const std::byte> message,
                                   TakeAlone take_alone) {
  if (to >= m_places) throw_bad_destination(to, m_places);
  bool sent = false;
  if (to != m_here) {
    // Under the network lock, so that nothing appended to `to` after this message can be
    // collected and handed to the network before it (collect runs under this lock too), and
    // behind any buffer waiting for room (per-destination order).
    std::lock_guard net(m_net_lock);
    // relaxed: see m_in_flight (increments are made under the lock we hold).
    if (!has_deferred_locked() &&
        m_in_flight.load(std::memory_order_relaxed) < m_max_outstanding_sends)
      sent = take_alone();
  }
  if (!sent) {
    send(to, message);
    flush();
  }
  if (over_limits(to)) wait_for_room(to);
}

void transport_base::send_now(place_id to, std::span<const std::byte> message) {
  if (to < m_places) {
    if (const place_id hop = m_routes.next_hop(m_here, to); hop != to) [[unlikely]] {
      // Routed: behind what is buffered for the intermediate, which then leaves at once, and
      // marked urgent so that the intermediate does not hold it either.
      send_routed(hop, to, message, true);
      flush();
      return;
    }
  }
  send_now_with(to, message, [&] {
    std::optional<sealed_buffer> alone = m_coalescer.take_alone(to, message);
    if (!alone) return false;
    // Its completion is left to the next poll: testing an incomplete send costs a round of
    // MPI progress on the latency path (net_send_framed tests, as it may spare the record).
    issue_locked(outgoing_buffer{to, std::move(*alone)});
    return true;
  });
}

void transport_base::send_now_framed(place_id to, std::vector<std::byte>& framed) {
  const auto message = std::span<const std::byte>(framed).subspan(k_frame_header);
  if (to < m_places && m_routes.next_hop(m_here, to) != to) [[unlikely]]
    return send_now(to, message); // a routed frame needs its route: not from `framed` itself
  // Hands the frame to the network; if the network keeps the vector, gives the caller another.
  const auto hand_over = [&](bool counted) {
    const auto length = static_cast<std::uint32_t>(message.size()); // checked by the caller
    std::memcpy(framed.data(), &length, k_frame_header);
    const framed_send sent = net_send_framed(to, framed, counted);
    if (sent == framed_send::kept) {
      framed.clear(); // moved from: valid, now also known to be empty
      if (!m_framed_pool.empty()) {
        framed = std::move(m_framed_pool.back());
        m_framed_pool.pop_back();
      }
    }
    return sent;
  };
  // The latency path (an `at` request or reply): nothing is outstanding to `to`, so nothing can
  // be ahead of this frame in the coalescer, and the frame skips it. Its bytes are counted only
  // if its send does not complete at once (see net_send_framed); one that does never was
  // outstanding. That spares the slot's lock, the completion's read-modify-write and the
  // limits' check of every round trip. (outstanding() == 0 also covers what this thread
  // appended before, and whatever it synchronised with: a concurrent append by another thread
  // is not ordered with this frame anyway.)
  if (to < m_places && to != m_here && message.size() <= k_max_message_bytes) {
    framed_send sent = framed_send::done;
    bool fast = false;
    {
      std::lock_guard net(m_net_lock);
      // relaxed: see m_in_flight (increments are made under the lock we hold).
      if (!has_deferred_locked() &&
          m_in_flight.load(std::memory_order_relaxed) < m_max_outstanding_sends &&
          m_coalescer.outstanding(to) == 0) {
        fast = true;
        sent = hand_over(false);
      }
    }
    if (fast) {
      if (sent != framed_send::done && over_limits(to)) wait_for_room(to);
      return;
    }
  }
  send_now_with(to, message, [&] {
    if (!m_coalescer.claim_alone(to, message.size())) return false;
    hand_over(true);
    return true;
  });
}

transport_base::framed_send
transport_base::net_send_framed(place_id to, std::vector<std::byte>& framed, bool counted) {
  if (!counted) count_framed_alone(to, framed.size()); // before the fake network completes it
  sealed_buffer copy{byte_buffer{framed.size()}, 1};
  copy.bytes.append(framed.data(), framed.size());
  issue_locked(outgoing_buffer{to, std::move(copy)});
  return framed_send::copied;
}

void transport_base::recycle_framed(std::vector<std::byte>&& framed) {
  if (m_framed_pool.size() < k_framed_pool && framed.capacity() <= k_framed_pool_max_capacity) {
    framed.clear();
    m_framed_pool.push_back(std::move(framed));
  }
}

bool transport_base::over_limits(place_id to) const noexcept {
  if (m_coalescer.outstanding(to) > m_max_outstanding_bytes) return true;
  // Network messages sealed and not completed: not yet collected, waiting for room, in flight.
  // relaxed: see m_in_flight (a hint; wait_for_room() re-checks after making progress).
  const std::size_t sends = m_coalescer.sealed_buffers() +
                            m_deferred_count.load(std::memory_order_relaxed) +
                            m_in_flight.load(std::memory_order_relaxed);
  return sends > m_max_outstanding_sends;
}

void transport_base::wait_for_room(place_id to) {
  // relaxed: a statistic (several senders may wait at once, hence a real RMW).
  m_backpressure_waits.fetch_add(1, std::memory_order_relaxed);
  while (over_limits(to)) {
    // With a tiny byte limit the buffered bytes alone may exceed it. (Not for the send count:
    // sealing a partial buffer would only add a network message.)
    if (m_coalescer.outstanding(to) > m_max_outstanding_bytes) m_coalescer.seal(to);
    try_progress_sends();
    // Keeps receiving (and, unless nested in a handler, delivering) while waiting: a peer
    // waiting for room towards us can then proceed, so two full places do not deadlock. (Our
    // sends complete only as peers receive them, and a peer receives while it waits, too.)
    poll();
    if (over_limits(to)) std::this_thread::yield();
  }
}

void transport_base::flush() {
  // Idle workers flush before parking: with nothing buffered or waiting for room, skip the
  // network lock. relaxed: a hint; a buffer deferred by another thread that we miss here is
  // handed over by that thread's next progress or the next poll.
  if (!m_coalescer.collect_pending(coalescer::seal_mode::all, {}) &&
      m_deferred_count.load(std::memory_order_relaxed) == 0)
    return;
  std::lock_guard net(m_net_lock);
  drain_locked(coalescer::seal_mode::all);
  net_complete_sends();
}

bool transport_base::try_progress_sends() {
  std::unique_lock net(m_net_lock, std::try_to_lock);
  if (!net.owns_lock()) return false;
  drain_locked(coalescer::seal_mode::none);
  net_complete_sends();
  return true;
}

void transport_base::flush_to_network() {
  flush();
  // relaxed: see m_deferred_count; our own flush's deferrals are seen (same thread, or under
  // m_net_lock which we took after), and the loop re-reads until the network took them.
  while (m_deferred_count.load(std::memory_order_relaxed) != 0) {
    try_progress_sends();
    if (poll() == 0) // sends complete as peers receive: keep receiving meanwhile
      std::this_thread::yield();
  }
}

void transport_base::drain_locked(coalescer::seal_mode mode) {
  issue_deferred_locked();                      // older than anything collect() hands out below
  if (!m_coalescer.anything_buffered()) return; // the common idle poll: no clock read
  const auto now = coalescer::clock::now();
  if (!m_coalescer.collect_pending(mode, now)) return;
  struct clear_on_exit {
    std::vector<outgoing_buffer>& v;
    ~clear_on_exit() { v.clear(); }
  } guard{m_outgoing};
  m_coalescer.collect(mode, now, m_outgoing);
  for (outgoing_buffer& out : m_outgoing) {
    if (out.to == m_here) {
      m_loopback.push_back(received{m_here, std::move(out.buffer.bytes), origin::loopback});
      continue;
    }
    // relaxed: see m_in_flight. Every increment is made under m_net_lock, which we hold, so
    // the value read is never below the truth (the cap is strict); a decrement not yet seen
    // only defers a buffer that could have left now, and the next drain issues it.
    if (has_deferred_locked() ||
        m_in_flight.load(std::memory_order_relaxed) >= m_max_outstanding_sends) {
      m_deferred.push_back(std::move(out)); // behind the older ones: per-destination order
      m_deferred_count.store(m_deferred.size() - m_deferred_head, std::memory_order_relaxed);
      continue;
    }
    issue_locked(std::move(out));
  }
}

void transport_base::issue_deferred_locked() {
  // relaxed: see drain_locked().
  while (has_deferred_locked() &&
         m_in_flight.load(std::memory_order_relaxed) < m_max_outstanding_sends) {
    outgoing_buffer out = std::move(m_deferred[m_deferred_head++]);
    if (m_deferred_head == m_deferred.size()) {
      m_deferred.clear(); // keeps the capacity
      m_deferred_head = 0;
    } else if (m_deferred_head >= 64 && 2 * m_deferred_head >= m_deferred.size()) {
      // Deferrals keep the queue from ever emptying: drop the issued prefix.
      m_deferred.erase(m_deferred.begin(),
                       m_deferred.begin() + static_cast<std::ptrdiff_t>(m_deferred_head));
      m_deferred_head = 0;
    }
    m_deferred_count.store(m_deferred.size() - m_deferred_head, std::memory_order_relaxed);
    issue_locked(std::move(out));
  }
}

void transport_base::count_issue_locked(std::size_t bytes) {
  // relaxed: see m_in_flight.
  const std::size_t in_flight = m_in_flight.fetch_add(1, std::memory_order_relaxed) + 1;
  // relaxed: a statistic; single writer (under m_net_lock).
  if (in_flight > m_peak_in_flight.load(std::memory_order_relaxed))
    m_peak_in_flight.store(in_flight, std::memory_order_relaxed);
  count_sent_locked(bytes);
}

void transport_base::count_sent_locked(std::size_t bytes) noexcept {
  bump(m_mpi_sent);
  bump(m_bytes_sent, bytes);
}

void transport_base::trace_sent_locked(place_id to, std::span<const std::byte> bytes,
                                       std::uint32_t frames) noexcept {
  if (m_trace_sent.empty() || g_trace == nullptr) return; // this transport is not traced
  const std::int64_t now = trace_now();
  const std::uint8_t kind =
      bytes.size() > k_frame_header ? std::to_integer<std::uint8_t>(bytes[k_frame_header]) : 0;
  g_trace->network_buffer().add(trace_event{
      now, now, to, m_trace_sent[to]++, static_cast<std::uint32_t>(bytes.size()),
      static_cast<std::uint16_t>(std::min<std::uint32_t>(frames, 0xFFFF)), trace_kind::send, kind});
}

void transport_base::issue_locked(outgoing_buffer&& out) {
  if (g_trace_on) [[unlikely]]
    trace_sent_locked(out.to, {out.buffer.bytes.data(), out.buffer.bytes.size()},
                      out.buffer.messages);
  // Counted before net_send(): in the fake network the receiver may complete it (network_done)
  // before net_send() returns, and the count must not dip below zero meanwhile.
  count_issue_locked(out.buffer.bytes.size());
  try {
    net_send(out.to, std::move(out.buffer));
  } catch (...) {
    m_in_flight.fetch_sub(1, std::memory_order_relaxed); // it never left
    throw;
  }
}

void transport_base::network_done(place_id to, std::size_t bytes) noexcept {
  m_coalescer.complete(to, bytes);
  // relaxed: see m_in_flight. (A sender that then sees room hands over a buffer of its own; it
  // reads nothing this thread wrote.)
  m_in_flight.fetch_sub(1, std::memory_order_relaxed);
}

// ---- receiving ------------------------------------------------------------------------------

void transport_base::accept(received&& message) {
  if (message.kind != origin::loopback) {
    bump(m_mpi_received);
    bump(m_bytes_received, message.bytes.size());
    if (g_trace_on && !m_trace_received.empty() && g_trace != nullptr) [[unlikely]] {
      const std::int64_t now = trace_now();
      g_trace->network_buffer().add(
          trace_event{now, now, message.from, m_trace_received[message.from]++,
                      static_cast<std::uint32_t>(message.bytes.size()), 0, trace_kind::receive});
    }
  }
  // relaxed, and no RMW (below): read by quiescent() as a hint. In the fake network the
  // sender's completion (a release RMW) comes after this, so whoever sees the sender idle also
  // sees this count. Only the poll owner writes it (successive owners are ordered by
  // m_poll_lock).
  m_pending_count.store(m_pending_count.load(std::memory_order_relaxed) + 1,
                        std::memory_order_relaxed);
  if (!m_has_current && m_pending_head == m_pending.size() &&
      !validate_frames(message.bytes.bytes())) {
    // Nothing waits before it (the common case: one message at a time) and its frames are
    // sound: it becomes the message being delivered at once, without a trip through the queue.
    // (A corrupt one is queued, and deliver() reports it: not here, where a nested progress
    // inside a sender would throw it into that sender.)
    m_current = std::move(message);
    m_has_current = true;
    m_offset = 0;
    return;
  }
  if (m_pending_head >= 64 && 2 * m_pending_head >= m_pending.size()) {
    // Arrivals keep the queue from ever emptying: drop the delivered prefix.
    m_pending.erase(m_pending.begin(),
                    m_pending.begin() + static_cast<std::ptrdiff_t>(m_pending_head));
    m_pending_head = 0;
  }
  m_pending.push_back(std::move(message));
}

void transport_base::progress(coalescer::seal_mode mode, bool receive) {
  std::lock_guard net(m_net_lock);
  // An idle poll has nothing to drain: skip the call (the poll's length is how late a message
  // is seen). relaxed: see m_deferred_count (its writers hold m_net_lock, as we do).
  if (m_deferred_count.load(std::memory_order_relaxed) != 0 || m_coalescer.anything_buffered())
    drain_locked(mode);
  net_complete_sends();
  if (!receive) return;
  net_receive();
  if (m_loopback.empty()) return;
  for (received& r : m_loopback) {
    const std::size_t bytes = r.bytes.size();
    accept(std::move(r));
    m_coalescer.complete(m_here, bytes); // after accept(): see there
  }
  m_loopback.clear();
}

std::size_t transport_base::poll() {
  const std::thread::id me = std::this_thread::get_id();
  // relaxed: see m_poll_owner.
  if (m_poll_owner.load(std::memory_order_relaxed) == me) {
    // Nested in our own handler: make network progress (so that back-pressure resolves and
    // peers' sends complete) but deliver nothing; the outer poll delivers in order.
    progress(coalescer::seal_mode::due, true);
    return 0;
  }
  std::unique_lock lock(m_poll_lock, std::try_to_lock);
  if (!lock.owns_lock()) return 0;
  m_poll_owner.store(me, std::memory_order_relaxed);
  struct clear_owner { // declared after `lock`: runs before the unlock
    std::atomic<std::thread::id>& owner;
    ~clear_owner() { owner.store(std::thread::id{}, std::memory_order_relaxed); }
  } guard{m_poll_owner};
  progress(coalescer::seal_mode::due, true);
  // The idle poll's test here, not in deliver(): deliver()'s frame (the end-of-batch guard) is
  // set up before any of its code runs, which every round of an idle worker would pay.
  if (!m_has_current && m_pending_head == m_pending.size()) return 0;
  return deliver();
}

namespace {
constexpr std::size_t k_deliveries_per_poll = 512;
} // namespace

std::size_t transport_base::deliver() {
  if (!m_handler) throw std::logic_error("apgas transport: poll() before set_handler()");
  std::size_t delivered = 0;
  struct end_of_batch { // also when a handler throws
    const batch_end_handler& hook;
    const std::size_t& delivered;
    ~end_of_batch() {
      if (delivered != 0 && hook) hook();
    }
  } batch_guard{m_batch_end, delivered};
  // Only what is pending now: handlers that reply to loopback cannot keep this poll forever.
  std::size_t budget = m_pending.size() - m_pending_head;
  for (;;) {
    // At most k_deliveries_per_poll logical messages per poll: the work they create runs
    // before more arrives (so the activities' frames are recycled by the worker's pool, which
    // keeps a few thousand, instead of a whole receive batch going through malloc), and the
    // cursor resumes at the next poll.
    if (delivered == k_deliveries_per_poll) break;
    if (!m_has_current) {
      if (budget == 0 || m_pending_head == m_pending.size()) break;
      --budget;
      m_current = std::move(m_pending[m_pending_head++]);
      if (m_pending_head == m_pending.size()) {
        m_pending.clear(); // keeps the capacity
        m_pending_head = 0;
      }
      m_has_current = true;
      m_offset = 0;
      // The whole network message is checked before any of it is delivered (accept() checked
      // one that it made current at once).
      if (const auto error = validate_frames(m_current.bytes.bytes())) {
        const place_id from = m_current.from;
        finish_current();
        throw transport_error(describe(*error, from));
      }
    }
    if (m_offset == m_current.bytes.size()) {
      finish_current();
      continue;
    }
    // The cursor moves before the call: if the handler throws, the next poll goes on after it.
    bool routed;
    const std::span<const std::byte> message =
        next_frame(m_current.bytes.bytes(), m_offset, routed);
    ++delivered;
    if (routed) [[unlikely]] {
      route_frame(message);
      continue;
    }
    bump(m_logical_received);
    m_handler(m_current.from, message);
  }
  // Urgent forwarded frames leave now (if a handler threw, at the flush interval).
  if (!m_forwarded_to.empty()) send_forwarded();
  return delivered;
}

void transport_base::route_frame(std::span<const std::byte> frame) {
  const route_header route = read_route(frame); // validate_frames checked its size
  if (route.source >= m_places || route.destination >= m_places)
    throw transport_error("apgas transport: a routed message from place " +
                          std::to_string(m_current.from) + " names place " +
                          std::to_string(std::max(route.source, route.destination)) + " of " +
                          std::to_string(m_places));
  if (route.destination == m_here) {
    bump(m_logical_received);
    m_handler(route.source, frame.subspan(k_route_header));
    return;
  }
  // The intermediate: on to the destination (it shares a row or a column with this place, so
  // the next hop is the destination itself), behind what this place buffered for it.
  const place_id hop = m_routes.next_hop(m_here, route.destination);
  const coalescer::appended_to appended =
      m_coalescer.append_routed(hop, route, frame.subspan(k_route_header));
  bump(m_forwarded);
  if (route.urgent &&
      std::find(m_forwarded_to.begin(), m_forwarded_to.end(), hop) == m_forwarded_to.end())
    m_forwarded_to.push_back(hop);
  after_append(hop, appended);
}

void transport_base::send_forwarded() {
  for (const place_id hop : m_forwarded_to) m_coalescer.seal(hop);
  m_forwarded_to.clear();
  std::lock_guard net(m_net_lock);
  drain_locked(coalescer::seal_mode::none);
  net_complete_sends();
}

void transport_base::finish_current() {
  if (m_current.kind == origin::loopback) m_coalescer.recycle(m_here, std::move(m_current.bytes));
  else net_release(std::move(m_current));
  m_current = received{};
  m_has_current = false;
  // relaxed, and no RMW: see accept().
  m_pending_count.store(m_pending_count.load(std::memory_order_relaxed) - 1,
                        std::memory_order_relaxed);
}

// ---- observers ------------------------------------------------------------------------------

bool transport_base::quiescent() const {
  // relaxed: a hint (see accept()); the coalescer's loads acquire.
  return m_coalescer.idle() && m_pending_count.load(std::memory_order_relaxed) == 0;
}

transport_stats transport_base::stats() const {
  transport_stats s;
  // relaxed: statistics, approximate while running.
  s.forwarded_messages = m_forwarded.load(std::memory_order_relaxed);
  s.logical_messages_sent = m_coalescer.appended_messages() - s.forwarded_messages +
                            m_sent_uncounted.load(std::memory_order_relaxed);
  // relaxed: statistics, approximate while running.
  s.logical_messages_received = m_logical_received.load(std::memory_order_relaxed);
  s.mpi_messages_sent = m_mpi_sent.load(std::memory_order_relaxed);
  s.mpi_messages_received = m_mpi_received.load(std::memory_order_relaxed);
  s.bytes_sent = m_bytes_sent.load(std::memory_order_relaxed);
  s.bytes_received = m_bytes_received.load(std::memory_order_relaxed);
  s.backpressure_waits = m_backpressure_waits.load(std::memory_order_relaxed);
  s.peak_sends_in_flight = m_peak_in_flight.load(std::memory_order_relaxed);
  s.buffer_bytes = m_coalescer.buffer_bytes();
  return s;
}

} // namespace apgas::detail
