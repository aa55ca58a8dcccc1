// Per-destination coalescing (see coalescer.hpp for the design).
#include "coalescer.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace apgas::detail {

// ---- framing --------------------------------------------------------------------------------

std::optional<frame_error> validate_frames(std::span<const std::byte> network_message) noexcept {
  std::size_t offset = 0;
  const std::size_t size = network_message.size();
  while (offset < size) {
    const std::size_t remaining = size - offset;
    if (remaining < k_frame_header) return frame_error{offset, 0, remaining};
    std::uint32_t length;
    std::memcpy(&length, network_message.data() + offset, k_frame_header);
    const bool routed = (length & k_routed_flag) != 0;
    length &= ~k_routed_flag;
    if (length > remaining - k_frame_header || (routed && length < k_route_header))
      return frame_error{offset, length, remaining};
    offset += k_frame_header + length;
  }
  return std::nullopt;
}

std::size_t count_frames(std::span<const std::byte> network_message) noexcept {
  std::size_t frames = 0;
  for (std::size_t offset = 0; offset < network_message.size(); ++frames)
    (void)next_frame(network_message, offset);
  return frames;
}

std::string describe(const frame_error& error, place_id from) {
  std::string text = "apgas transport: corrupt network message from place " + std::to_string(from) +
                     ": the frame at byte " + std::to_string(error.offset);
  if (error.remaining < k_frame_header)
    return text + " has a cut length prefix (" + std::to_string(error.remaining) + " bytes left)";
  if (error.claimed <= error.remaining - k_frame_header)
    return text + " is a routed frame of " + std::to_string(error.claimed) +
           " bytes, too short for its route";
  return text + " claims " + std::to_string(error.claimed) + " bytes but only " +
         std::to_string(error.remaining - k_frame_header) + " follow";
}

// ---- coalescer ------------------------------------------------------------------------------

namespace {
// Out of line and cold: the string building would otherwise enlarge the frames (register
// saves) of append() and take_alone(), which run for every message.
[[noreturn, gnu::cold, gnu::noinline]] void throw_too_long(std::size_t bytes) {
  throw std::length_error("apgas transport: message of " + std::to_string(bytes) +
                          " bytes exceeds the limit of " + std::to_string(k_max_message_bytes));
}
} // namespace

namespace {
std::size_t checked_fitted_buffer_bytes(std::size_t destinations, const options& opts) {
  if (opts.coalesce_bytes == 0 || opts.coalesce_bytes > k_max_message_bytes)
    throw std::invalid_argument("apgas transport: coalesce_bytes must be in [1, 2 GiB)");
  return coalescer::fitted_buffer_bytes(destinations, opts);
}
} // namespace

std::size_t coalescer::fitted_buffer_bytes(std::size_t destinations, const options& opts) noexcept {
  // Each destination may hold one buffer being filled and k_pool_per_destination kept for
  // reuse (sealed ones in flight are bounded by max_outstanding_sends, for all together).
  const std::size_t buffers = std::max<std::size_t>(destinations, 1) * (1 + k_pool_per_destination);
  const std::size_t share = (opts.coalesce_memory_mib << 20) / buffers;
  if (share >= opts.coalesce_bytes) return opts.coalesce_bytes;
  return std::min(opts.coalesce_bytes, std::max(share, k_min_fitted_buffer_bytes));
}

coalescer::coalescer(std::size_t destinations, const options& opts,
                     std::size_t buffered_destinations)
    : m_buffer_bytes(checked_fitted_buffer_bytes(buffered_destinations, opts)),
      m_flush_interval(std::chrono::microseconds(opts.flush_us)),
      m_max_outstanding_bytes(opts.max_outstanding_bytes), m_coalesce(opts.coalesce),
      m_destinations(destinations), m_slots(std::make_unique<slot[]>(destinations)) {
  // Each destination is listed at most once, so these never reallocate after this.
  m_active.reserve(destinations);
  m_scan.reserve(destinations);
}

coalescer::~coalescer() = default;

void coalescer::lower_next_due(clock::time_point due) noexcept {
  const std::int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(due.time_since_epoch()).count();
  // relaxed: m_next_due is a hint that guards no data. Its only ordering need, that an
  // appender's lowering is not overwritten by collect()'s reset, comes from the slot lock
  // (see collect()), and RMWs always act on the latest value.
  std::int64_t seen = m_next_due.load(std::memory_order_relaxed);
  while (ns < seen && !m_next_due.compare_exchange_weak(seen, ns, std::memory_order_relaxed)) {
  }
}

void coalescer::start_buffer_locked(place_id to, slot& s, std::size_t frame_bytes, bool coalesce) {
  if (s.current.capacity() == 0 && !s.pool.empty()) {
    s.current = std::move(s.pool.back());
    s.pool.pop_back();
  }
  // Without coalescing a buffer holds one message: do not reserve a whole coalescing buffer.
  const std::size_t want = coalesce ? m_buffer_bytes : frame_bytes;
  s.current.reserve(std::max(want, frame_bytes));
  if (!s.listed) {
    s.listed = true;
    // relaxed: a hint for collect_pending(); see m_listed.
    m_listed.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard active(m_active_lock);
    m_active.push_back(to);
  }
  if (coalesce) {
    // Listed first, then the due time lowered: collect() relies on this order (see there).
    s.due = clock::now() + m_flush_interval;
    lower_next_due(s.due);
  }
}

void coalescer::seal_locked(slot& s) {
  s.ready.push_back(sealed_buffer{std::move(s.current), s.current_messages});
  s.current_messages = 0;
  s.merge_at = slot::k_no_merge; // the frame left with its buffer
  // relaxed: a hint for collect_pending(); the buffer itself is published by the slot lock.
  m_ready.fetch_add(1, std::memory_order_relaxed);
}

template <class TryMerge, class Fill>
coalescer::appended_to coalescer::append_frame_locked(place_id to, std::size_t size,
                                                      TryMerge try_merge, Fill fill, bool mergeable,
                                                      std::uint64_t merge_route) {
  if (size > k_max_message_bytes) throw_too_long(size);
  const std::size_t frame_bytes = k_frame_header + size;
  slot& s = m_slots[to];
  appended_to result;
  std::lock_guard lock(s.lock);
  if (try_merge(s, result)) return result;
  if (!s.current.empty() && s.current.size() + frame_bytes > m_buffer_bytes) {
    seal_locked(s); // the new frame would overflow: the full buffer leaves first
    result.sealed = true;
  }
  // relaxed: see set_coalescing (read once: a buffer is started and sealed the same way).
  const bool coalesce = m_coalesce.load(std::memory_order_relaxed);
  if (s.current.empty()) start_buffer_locked(to, s, frame_bytes, coalesce);
  const std::size_t frame_at = s.current.size();
  fill(start_frame(s.current, size));
  s.merge_at = mergeable ? frame_at : slot::k_no_merge;
  s.merge_route = merge_route;
  ++s.current_messages;
  s.count_appended(frame_bytes);
  // What slot::outstanding() computes, with the count we just wrote (we hold the lock).
  result.over_bytes = s.outstanding() > m_max_outstanding_bytes;
  if (!coalesce || s.current.size() >= m_buffer_bytes) {
    seal_locked(s);
    result.sealed = true;
  }
  return result;
}

coalescer::appended_to coalescer::append(place_id to, std::span<const std::byte> message) {
  return append_frame_locked(
      to, message.size(), [](slot&, appended_to&) { return false; },
      [message](std::byte* at) {
        if (!message.empty()) std::memcpy(at, message.data(), message.size());
      },
      false);
}

coalescer::appended_to coalescer::append_routed(place_id hop, route_header route,
                                                std::span<const std::byte> message) {
  if (message.size() > k_max_message_bytes - k_route_header) throw_too_long(message.size());
  const std::size_t size = k_route_header + message.size();
  return append_frame_locked(
      hop, size, [](slot&, appended_to&) { return false; },
      [&](std::byte* at) {
        // start_frame wrote the plain length: flag it (size < 2 GiB, so the bit was clear).
        const auto length = static_cast<std::uint32_t>(size) | k_routed_flag;
        std::memcpy(at - k_frame_header, &length, k_frame_header);
        write_route(at, route);
        if (!message.empty()) std::memcpy(at + k_route_header, message.data(), message.size());
      },
      false);
}

coalescer::appended_to coalescer::append_merged_framed(place_id to, std::uint64_t route,
                                                       const merge_head& head,
                                                       std::size_t body_size,
                                                       message_writer write_body,
                                                       const void* context) {
  // The merge is tried again under the lock the new frame takes: another sender may have
  // started a frame with this head since append_merged looked.
  const auto try_merge = [&](slot& s, appended_to& result) {
    return try_merge_locked(s, route, head, body_size, write_body, context, result);
  };
  const std::size_t route_bytes = route == k_direct ? 0 : k_route_header;
  if (body_size > k_max_message_bytes - route_bytes - head.size()) throw_too_long(body_size);
  const std::size_t size = route_bytes + head.size() + body_size;
  return append_frame_locked(
      to, size, try_merge,
      [&](std::byte* at) {
        if (route != k_direct) {
          // start_frame wrote the plain length: flag it (size < 2 GiB, so the bit was clear).
          const auto length = static_cast<std::uint32_t>(size) | k_routed_flag;
          std::memcpy(at - k_frame_header, &length, k_frame_header);
          write_route(at, route_header{static_cast<place_id>(route >> 32),
                                       static_cast<place_id>(route), false});
          at += k_route_header;
        }
        std::memcpy(at, head.data(), head.size());
        write_body(at + head.size(), context);
      },
      true, route);
}

coalescer::appended_to coalescer::append_merged_routed(place_id hop, route_header route,
                                                       const merge_head& head,
                                                       std::size_t body_size,
                                                       message_writer write_body,
                                                       const void* context) {
  const std::uint64_t key = route_key(route);
  {
    slot& s = m_slots[hop];
    appended_to result;
    std::lock_guard lock(s.lock);
    if (try_merge_locked(s, key, head, body_size, write_body, context, result)) return result;
  }
  return append_merged_framed(hop, key, head, body_size, write_body, context);
}

std::optional<sealed_buffer> coalescer::take_alone(place_id to,
                                                   std::span<const std::byte> message) {
  if (message.size() > k_max_message_bytes) throw_too_long(message.size());
  const std::size_t frame_bytes = k_frame_header + message.size();
  slot& s = m_slots[to];
  std::lock_guard lock(s.lock);
  if (!s.current.empty() || !s.ready.empty()) return std::nullopt;
  sealed_buffer alone{byte_buffer{}, 1};
  if (!s.pool.empty()) {
    alone.bytes = std::move(s.pool.back());
    s.pool.pop_back();
  }
  append_frame(alone.bytes, message);
  s.count_appended(frame_bytes);
  return alone;
}

bool coalescer::claim_alone(place_id to, std::size_t message_bytes) {
  if (message_bytes > k_max_message_bytes) throw_too_long(message_bytes);
  slot& s = m_slots[to];
  std::lock_guard lock(s.lock);
  if (!s.current.empty() || !s.ready.empty()) return false;
  s.count_appended(k_frame_header + message_bytes);
  return true;
}

void coalescer::count_alone(place_id to, std::size_t message_bytes) {
  slot& s = m_slots[to];
  std::lock_guard lock(s.lock);
  s.count_appended(k_frame_header + message_bytes);
}

bool coalescer::seal(place_id to) {
  slot& s = m_slots[to];
  std::lock_guard lock(s.lock);
  if (s.current.empty()) return false;
  seal_locked(s); // stays listed: collect() finds the ready buffer
  return true;
}

bool coalescer::collect_pending(seal_mode mode, clock::time_point now) const noexcept {
  // relaxed: hints. A stale "nothing" delays the buffer to the next poll at most, because the
  // value is eventually visible and the transport polls again.
  if (m_ready.load(std::memory_order_relaxed) != 0) return true;
  switch (mode) {
  case seal_mode::none:
    return false;
  case seal_mode::due:
    return std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() >=
           m_next_due.load(std::memory_order_relaxed);
  case seal_mode::all:
    return m_listed.load(std::memory_order_relaxed) != 0;
  }
  return true;
}

// Why m_next_due is never later than the truth after a reset: collect() resets it *before*
// taking the active list; an appender that starts a buffer lists the destination *before*
// lowering the due time, both under the slot lock. Either the destination was in the list we
// took, and we lock its slot after the appender released it and lower the due time for it
// ourselves; or it was listed after we took the list, so its lowering comes after our reset
// (active-list mutex) and survives it.
std::size_t coalescer::collect(seal_mode mode, clock::time_point now,
                               std::vector<outgoing_buffer>& out) {
  bool due_scan = false;
  if (mode == seal_mode::due) {
    const std::int64_t now_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
    // relaxed: see lower_next_due().
    if (now_ns >= m_next_due.load(std::memory_order_relaxed)) {
      m_next_due.store(k_never, std::memory_order_relaxed);
      due_scan = true;
    }
  }
  {
    std::lock_guard active(m_active_lock);
    m_scan.swap(m_active);
  }
  std::size_t handed = 0;
  for (const place_id to : m_scan) {
    slot& s = m_slots[to];
    std::lock_guard lock(s.lock);
    if (!s.current.empty()) {
      if (mode == seal_mode::all || (due_scan && s.due <= now)) seal_locked(s);
      else lower_next_due(s.due); // (a buffer started without coalescing was sealed at once)
    }
    for (sealed_buffer& b : s.ready) out.push_back(outgoing_buffer{to, std::move(b)});
    handed += s.ready.size();
    // relaxed: see seal_locked().
    m_ready.fetch_sub(s.ready.size(), std::memory_order_relaxed);
    s.ready.clear();
    if (s.current.empty()) {
      s.listed = false;
      m_listed.fetch_sub(1, std::memory_order_relaxed); // relaxed: see m_listed
    } else {
      std::lock_guard active(m_active_lock);
      m_active.push_back(to);
    }
  }
  m_scan.clear();
  return handed;
}

void coalescer::recycle(place_id to, byte_buffer&& buffer) {
  // Oversized buffers (a big message) are dropped: the pool keeps memory bounded.
  if (buffer.capacity() == 0 || buffer.capacity() > 2 * m_buffer_bytes) return;
  buffer.clear();
  slot& s = m_slots[to];
  std::lock_guard lock(s.lock);
  if (s.pool.size() < k_pool_per_destination) s.pool.push_back(std::move(buffer));
}

void coalescer::complete(place_id to, std::size_t bytes) noexcept {
  // release: pairs with the acquire loads in slot::outstanding, so that whoever sees the
  // completion also sees what the completing thread did before (the buffer handed back).
  m_slots[to].completed_bytes.fetch_add(bytes, std::memory_order_release);
}

std::uint64_t coalescer::outstanding(place_id to) const noexcept {
  return m_slots[to].outstanding();
}

std::size_t coalescer::sealed_buffers() const noexcept {
  // relaxed: see m_ready (back-pressure re-checks after progress, so stale is harmless).
  return m_ready.load(std::memory_order_relaxed);
}

bool coalescer::idle() const noexcept {
  for (std::size_t i = 0; i < m_destinations; ++i)
    if (m_slots[i].outstanding() != 0) return false;
  return true;
}

std::uint64_t coalescer::appended_messages() const noexcept {
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < m_destinations; ++i)
    // relaxed: a statistic.
    total += m_slots[i].appended.load(std::memory_order_relaxed);
  return total;
}

} // namespace apgas::detail
