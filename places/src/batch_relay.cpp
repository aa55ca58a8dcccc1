// Relayed aggregator batches at the intermediate (see batch_relay.hpp): sorting, holding and
// sending on.
#include "batch_relay.hpp"

#include "apgas/detail/finish_name.hpp"
#include "apgas/detail/message_format.hpp"
#include "apgas/detail/steady_time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace apgas::detail {

namespace {
[[noreturn, gnu::cold]] void throw_bad_record(place_id here, place_id from, place_id to) {
  throw transport_error(fmt::format("apgas: place {}: a relay batch from place {} holds an update "
                                    "for place {}, which this place does not relay to (a damaged "
                                    "message?)",
                                    here, from, to));
}

[[noreturn, gnu::cold]] void throw_bad_index(place_id here, place_id from, std::uint32_t index,
                                             std::size_t targets) {
  throw transport_error(fmt::format("apgas: place {}: a relay batch from place {} names target "
                                    "{} of {} (a damaged message?)",
                                    here, from, index, targets));
}
} // namespace

batch_relay::batch_relay(distributed_finish& finish, transport& net, place_id here, place_id places,
                         std::uint32_t route_above, message_kind batch_kind,
                         std::chrono::microseconds flush_after)
    : m_finish(finish), m_net(net), m_here(here), m_places(places), m_grid(places, route_above),
      m_columns(m_grid.columns()), m_rows((places + m_columns - 1) / m_columns),
      m_batch_kind(batch_kind),
      m_flush_after_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(flush_after).count()) {}

std::size_t batch_relay::relay_slot(place_id to) const noexcept {
  // A place of this place's column by its row, one of its row by its column after those.
  if (to % m_columns == m_here % m_columns) return to / m_columns;
  return m_rows + to % m_columns;
}

void batch_relay::start_held(held_batch& h, proxy& px, place_id to, const finish_id& id,
                             std::int64_t code, const std::byte* target, std::size_t full) {
  if (!m_spare.empty()) {
    h.bytes = std::move(m_spare.back());
    m_spare.pop_back();
  }
  h.bytes.reserve(full);
  start_framed(h.bytes, m_batch_kind, id.home, id.serial, code);
  h.bytes.insert(h.bytes.end(), target, target + k_relay_target_bytes);
  m_finish.add_strand(px); // a strand of px runs (the relay batch): the count is not zero
  h.px = &px;
  h.to = to;
  h.since_ns = steady_now_ns();
  // relaxed: hints (see m_held_batches), written under the lock.
  if (m_held_batches.fetch_add(1, std::memory_order_relaxed) == 0)
    m_oldest_ns.store(h.since_ns, std::memory_order_relaxed);
}

void batch_relay::take(place_id from, const finish_id& id, std::int64_t code,
                       std::uint32_t update_bytes, std::uint32_t hold_bytes,
                       std::span<const std::byte> targets, std::span<const std::byte> records) {
  const std::size_t record = k_index_bytes + update_bytes;
  const std::size_t target_count = targets.size() / k_relay_target_bytes;
  const std::size_t head = k_frame_header + sizeof(message_kind) + sizeof(id.home) +
                           sizeof(id.serial) + sizeof(code) + k_relay_target_bytes;
  // A held batch leaves once it holds hold_bytes of updates (at least one).
  const std::size_t full =
      head + std::max<std::size_t>(hold_bytes / update_bytes, 1) * update_bytes;
  // Checked first: a damaged message fails the place (the handler throws) before any update
  // of it is held.
  m_target_slots.resize(target_count);
  for (std::size_t i = 0; i < target_count; ++i) {
    place_id to;
    std::memcpy(&to, targets.data() + i * k_relay_target_bytes, sizeof to);
    if (to >= m_places || to == m_here) [[unlikely]]
      throw_bad_record(m_here, from, to);
    m_target_slots[i] = relay_slot(to);
  }
  for (std::size_t at = 0; at < records.size(); at += record) {
    std::uint32_t index;
    std::memcpy(&index, records.data() + at, sizeof index);
    if (index >= target_count) [[unlikely]]
      throw_bad_index(m_here, from, index, target_count);
  }
  proxy& px = m_finish.open_arrived(id, from);
  std::vector<held_batch> ready;
  try {
    std::lock_guard guard(m_mutex);
    group& g = m_groups[group_key{id, code}];
    if (g.slots.empty()) g.slots.resize(m_rows + m_columns);
    for (const std::byte* at = records.data(); at != records.data() + records.size();
         at += record) {
      std::uint32_t index;
      std::memcpy(&index, at, sizeof index);
      const std::byte* target = targets.data() + std::size_t{index} * k_relay_target_bytes;
      held_batch& h = g.slots[m_target_slots[index]];
      if (!h.bytes.empty() && std::memcmp(h.bytes.data() + head - k_relay_target_bytes, target,
                                          k_relay_target_bytes) != 0) {
        // Another target at that place (or a place that shares the slot: not on the grid's
        // paths, but the message says so): the batch so far leaves first.
        release_locked(g, h, ready);
      }
      if (h.bytes.empty()) {
        place_id to;
        std::memcpy(&to, target, sizeof to);
        start_held(h, px, to, id, code, target, full);
        ++g.held;
      }
      const std::size_t used = h.bytes.size();
      h.bytes.resize(used + update_bytes); // within the capacity start_held reserved
      std::memcpy(h.bytes.data() + used, at + k_index_bytes, update_bytes);
      if (used + update_bytes >= full) {
        release_locked(g, h, ready);
      }
    }
    if (g.held == 0) m_groups.erase(group_key{id, code});
  } catch (...) {
    // Out of memory: what was sorted already is held or ready and leaves as usual; the rest
    // of the relay batch fails, as a batch whose update threw.
    px.fs.add_exception(std::current_exception());
  }
  // relaxed: statistics.
  m_updates_relayed.fetch_add(records.size() / record, std::memory_order_relaxed);
  send(ready);
  m_finish.end_strands(px, 1); // the relay batch's own strand, after those it opened
}

void batch_relay::release_locked(group& g, held_batch& h, std::vector<held_batch>& out) {
  out.push_back(std::move(h));
  h = held_batch{};
  --g.held;
  m_held_batches.fetch_sub(1, std::memory_order_relaxed); // relaxed: a hint
}

void batch_relay::take_due_locked(bool all, std::int64_t now, std::vector<held_batch>& out) {
  std::int64_t oldest = 0;
  for (auto it = m_groups.begin(); it != m_groups.end();) {
    group& g = it->second;
    for (held_batch& h : g.slots) {
      if (h.bytes.empty()) continue;
      if (all || now - h.since_ns >= m_flush_after_ns) {
        release_locked(g, h, out);
      } else if (oldest == 0 || h.since_ns < oldest) {
        oldest = h.since_ns;
      }
    }
    it = g.held == 0 ? m_groups.erase(it) : std::next(it);
  }
  m_oldest_ns.store(oldest, std::memory_order_relaxed); // relaxed: a hint
}

void batch_relay::flush(bool all) noexcept {
  // relaxed: hints. A batch held by another thread that this one does not see yet leaves at a
  // later poll, or when that thread's place goes idle.
  if (m_held_batches.load(std::memory_order_relaxed) == 0) return;
  const std::int64_t now = steady_now_ns();
  if (!all && now - m_oldest_ns.load(std::memory_order_relaxed) < m_flush_after_ns) return;
  std::vector<held_batch> due;
  {
    std::lock_guard guard(m_mutex);
    take_due_locked(all, now, due);
  }
  send(due);
}

std::string batch_relay::describe() const {
  std::lock_guard guard(m_mutex);
  std::string out;
  const std::int64_t now = steady_now_ns();
  for (const auto& [key, g] : m_groups) {
    std::int64_t oldest = now;
    std::size_t bytes = 0;
    for (const held_batch& h : g.slots) {
      if (h.bytes.empty()) continue;
      oldest = std::min(oldest, h.since_ns);
      bytes += h.bytes.size();
    }
    out += fmt::format("    finish {}: {} batches held ({} bytes), the oldest for {} us\n",
                       apgas::detail::describe(key.id), g.held, bytes, (now - oldest) / 1000);
  }
  return out;
}

void batch_relay::send(std::vector<held_batch>& batches) noexcept {
  // Outside the lock: a send may wait for room and poll, and so take another relay batch.
  for (held_batch& h : batches) {
    m_finish.count_send(h.px->fs, h.to);
    m_net.send(h.to, std::span<const std::byte>(h.bytes).subspan(k_frame_header));
    m_batches_sent.fetch_add(1, std::memory_order_relaxed); // relaxed: statistics
    m_finish.end_strands(*h.px, 1);
    h.bytes.clear();
    std::lock_guard guard(m_mutex);
    if (m_spare.size() < m_rows + m_columns) m_spare.push_back(std::move(h.bytes));
  }
  batches.clear();
}

} // namespace apgas::detail
