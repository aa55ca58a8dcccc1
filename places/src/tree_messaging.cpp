// Messages up and down a tree of the places (see tree_messaging.hpp).
#include "apgas/detail/tree_messaging.hpp"

#include "apgas/detail/message_dispatcher.hpp"
#include "apgas/detail/scheduler.hpp"
#include "apgas/serialization.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace apgas::detail {

namespace {

/// Bytes of the head of an entry of a tree-up message: its root, kind, original sender and
/// payload length (the payload follows).
constexpr std::size_t k_up_entry_head =
    sizeof(place_id) + sizeof(message_kind) + sizeof(place_id) + sizeof(std::uint32_t);

void append_entry(std::vector<std::byte>& out, place_id root, message_kind kind, place_id from,
                  std::span<const std::byte> payload) {
  const auto head =
      pack_head(root, kind, from, static_cast<std::uint32_t>(payload.size())); // < 4 GiB
  out.insert(out.end(), head.begin(), head.end());
  out.insert(out.end(), payload.begin(), payload.end());
}

} // namespace

tree_messaging::tree_messaging(message_dispatcher& dispatcher)
    : m_dispatcher(dispatcher), m_here(dispatcher.here()), m_places(dispatcher.places()),
      m_arity(dispatcher.sched().opts().tree_arity),
      m_kind_up(dispatcher.add_handler<&tree_messaging::deliver_or_relay_up>(*this, "tree up")),
      m_kind_down(
          dispatcher.add_handler<&tree_messaging::deliver_and_pass_down>(*this, "tree down")) {
  dispatcher.after_each_delivery<&tree_messaging::flush_relays>(*this);
}

void tree_messaging::deliver(place_id as_from, message_kind kind,
                             std::span<const std::byte> payload) {
  m_dispatcher.handle(as_from, kind, payload);
}

// ---- up ----------------------------------------------------------------------------------------

void tree_messaging::send_up(place_id root, message_kind kind, std::span<const std::byte> payload) {
  if (root == m_here) return deliver(m_here, kind, payload);
  std::vector<std::byte> bytes;
  bytes.reserve(1 + sizeof(std::uint32_t) + k_up_entry_head + payload.size());
  const auto head = pack_head(m_kind_up, std::uint32_t{1});
  bytes.insert(bytes.end(), head.begin(), head.end());
  append_entry(bytes, root, kind, m_here, payload);
  m_counters.up_sent.fetch_add(1, std::memory_order_relaxed); // a statistic
  m_dispatcher.net().send_now(tree(root).parent(m_here), bytes);
}

void tree_messaging::deliver_or_relay_up(place_id /*from*/, std::span<const std::byte> body) {
  byte_reader r(body);
  const auto count = deserialize<std::uint32_t>(r);
  for (std::uint32_t i = 0; i < count; ++i) {
    place_id root;
    message_kind kind;
    place_id from;
    std::uint32_t bytes;
    const std::byte* head = r.read_span(k_up_entry_head).data();
    std::memcpy(&root, head, sizeof root);
    std::memcpy(&kind, head + sizeof root, sizeof kind);
    std::memcpy(&from, head + sizeof root + sizeof kind, sizeof from);
    std::memcpy(&bytes, head + sizeof root + sizeof kind + sizeof from, sizeof bytes);
    const std::span<const std::byte> payload = r.read_span(bytes);
    if (root >= m_places || from >= m_places)
      throw transport_error("apgas: a tree-up message names a place that does not exist");
    if (root == m_here) {
      deliver(from, kind, payload);
      continue;
    }
    // Relayed with the others of this delivery, in arrival order (so entries of one place
    // keep their order: a place's entries for a root always take the same path).
    const place_id next = tree(root).parent(m_here);
    std::vector<std::byte>& out = m_relays[next];
    if (out.empty()) {
      const auto message_head = pack_head(m_kind_up, std::uint32_t{0}); // count set at flush
      // resize and copy: GCC 12 sees an insert into the empty vector overflow (a false alarm)
      out.resize(message_head.size());
      std::memcpy(out.data(), message_head.data(), message_head.size());
    }
    append_entry(out, root, kind, from, payload);
    ++m_relay_counts[next];
    m_counters.entries_relayed.fetch_add(1, std::memory_order_relaxed); // a statistic
  }
  r.expect_end();
}

void tree_messaging::flush_relays() noexcept {
  if (m_relays.empty()) return;
  try {
    for (auto& [next, bytes] : m_relays) {
      const std::uint32_t count = m_relay_counts[next];
      std::memcpy(bytes.data() + sizeof(message_kind), &count, sizeof count);
      m_counters.up_sent.fetch_add(1, std::memory_order_relaxed);
      m_dispatcher.net().send_now(next, bytes);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "apgas: place %u: cannot relay messages up a tree: %s\n", m_here,
                 e.what());
    std::abort(); // a lost report would hang its finish
  }
  m_relays.clear();
  m_relay_counts.clear();
}

// ---- down --------------------------------------------------------------------------------------

void tree_messaging::send_down(place_id to, place_id root, message_kind kind,
                               const std::vector<place_id>& targets,
                               std::span<const std::byte> payload) {
  std::vector<std::byte> bytes;
  byte_writer w(bytes);
  serialize_all(w, m_kind_down, root, kind, targets);
  w.write_bytes(payload.data(), payload.size());
  m_counters.down_sent.fetch_add(1, std::memory_order_relaxed); // a statistic
  m_dispatcher.net().send_now(to, bytes);
}

void tree_messaging::multicast(place_id root, const std::vector<place_id>& targets,
                               message_kind kind, std::span<const std::byte> payload) {
  std::vector<place_id> others;
  others.reserve(targets.size());
  bool here_too = false;
  for (place_id t : targets) {
    if (t == m_here) here_too = true;
    else others.push_back(t);
  }
  // To this place through the transport's loopback: the payload is then handled by a message
  // handler, as it is at every other target.
  if (here_too) send_down(m_here, root, kind, {m_here}, payload);
  tree(root).split_by_child(m_here, others,
                            [&](place_id child, const std::vector<place_id>& group) {
                              send_down(child, root, kind, group, payload);
                            });
}

void tree_messaging::deliver_and_pass_down(place_id /*from*/, std::span<const std::byte> body) {
  byte_reader r(body);
  const auto root = deserialize<place_id>(r);
  const auto kind = deserialize<message_kind>(r);
  auto targets = deserialize<std::vector<place_id>>(r);
  const std::span<const std::byte> payload = r.read_span(r.remaining());
  if (root >= m_places)
    throw transport_error("apgas: a tree-down message names a place that does not exist");
  const place_tree t = tree(root);
  bool here_too = false;
  std::erase_if(targets, [&](place_id p) {
    if (p >= m_places || (p != m_here && !t.in_subtree(m_here, p)))
      throw transport_error("apgas: a tree-down message targets a place outside its subtree");
    if (p != m_here) return false;
    here_too = true;
    return true;
  });
  t.split_by_child(m_here, targets, [&](place_id child, const std::vector<place_id>& group) {
    send_down(child, root, kind, group, payload);
  });
  if (here_too) deliver(root, kind, payload);
}

} // namespace apgas::detail
