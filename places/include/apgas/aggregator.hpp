/// @file aggregator: a stream of small remote updates, sent in batches per destination.
///
///     struct add { void operator()(histogram& h, std::uint32_t bin) const { ++h.count[bin]; } };
///
///     auto agg = co_await apgas::make_aggregator<add, histogram, std::uint32_t>();
///     for (...) agg.push(refs[owner(x)], bin(x));  // buffered for refs[owner(x)].home()
///     agg.flush();                                 // sends what is left (so does ~aggregator)
///
/// Each `agg.push(target, args...)` is an async_at of `F{}(*target, args...)` at target.home(),
/// governed by the finish of the activity that made the aggregator; what differs from
/// `apgas::async_at` is the cost. The updates for one place wait in a buffer of the aggregator
/// (no lock, no count, no message), and a full buffer leaves as one activity of that finish.
/// Where it arrives, the message handler runs it at once, straight from the received bytes: its
/// updates one after the other in a tight loop, where the compiler inlines F (no copy, no
/// frame, and no batch waits behind the place's own work, piling up in memory). Chapel's
/// aggregators and the conveyors of the bale library work the same way; Charm++'s TRAM and
/// UPC++'s rpc_ff batching too.
///
/// Rules:
///  - F is a function object that captures nothing; T is the type of the object updated at the
///    destination; the Args are bitwise (numbers, plain structs, global_refs): they are copied
///    into the buffer as bytes. F runs in a message handler, as the function of an `at` of a
///    plain function does: it must not block (a lock that an activity of the place may hold
///    while it spawns or pushes is a deadlock; atomics are fine).
///  - An aggregator belongs to the activity that made it, and its updates to that activity's
///    finish, wherever they are pushed from (a nested finish does not wait for them). Use it in
///    that activity and in the functions it calls or awaits in sequence, not in another activity:
///    it takes no lock. Its destruction sends what is left (the activity is still running then,
///    so its finish waits for them): a buffered update is never lost. flush() sends them earlier.
///  - An update that throws fails alone: the others of its batch still run, and the finish gets
///    one error per failed batch (the exception itself if one update failed, else a text that
///    says how many failed and what the first said).
///  - F may take a whole batch instead, `F{}(T&, apgas::updates<Args...>)` (a range of the
///    updates' arguments): its loop can then keep what it reads of T in registers and count
///    once per batch. What it throws fails that batch.
///  - Memory: at most one buffer of `bytes_per_place` per destination this aggregator has sent
///    to (allocated on the first update for that place), and a table of 64 bytes per place.
///    With routing on (more places than --route-above), only the places of this place's row
///    and column of the routing grid get buffers of their own: the updates for any other place
///    share one relay buffer per intermediate place (4 bytes more per update, the index of
///    its target in the buffer's table of targets), and the intermediate sorts them into batches
///    per destination, which it holds until they are full, so a place keeps about 3 sqrt(P) buffers
///    (see docs/scaling.md).
///  - Ordering: none between updates, as between any asyncs.
#pragma once

#include "apgas/detail/aggregator_batches.hpp"
#include "apgas/global_ref.hpp"
#include "apgas/place.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace apgas {

/// @brief `auto agg = co_await make_aggregator<F, T, Args...>()`: an aggregator of updates
/// F{}(T&, Args...) owned by the calling activity, with buffers of `bytes_per_place` bytes
/// (rounded down to whole updates, at least one). @throws std::logic_error without a runtime.
template <class F, class T, class... Args>
APGAS_AWAIT_IT detail::make_aggregator_awaiter<F, T, Args...> make_aggregator(
    std::size_t bytes_per_place = aggregator<F, T, Args...>::k_default_bytes_per_place) {
  return {bytes_per_place};
}

/// @brief Buffers remote updates F{}(*target, args...) per destination place and sends each
/// buffer as one activity of its owner's finish (see the top of this file). Made by
/// make_aggregator. Thread-safety: one activity only.
template <class F, class T, class... Args>
class aggregator {
  static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                "apgas::aggregator: F must capture nothing (a lambda with [] or an empty "
                "function object): it is named by its type at the other place");
  static_assert(sizeof...(Args) >= 1, "apgas::aggregator: an update carries at least one value");
  static_assert((detail::is_bitwise_v<Args> && ...),
                "apgas::aggregator: the update's arguments must be bitwise (trivially copyable, "
                "no pointers): they are copied into the buffer as bytes. Send a global_ref or an "
                "index instead of a pointer; use async_at for other arguments");
  static_assert(std::is_invocable_v<const F&, T&, Args&...> ||
                    detail::k_takes_batches<F, T, Args...>,
                "apgas::aggregator<F, T, Args...>: F must be callable as F{}(T&, Args...) (one "
                "update) or F{}(T&, apgas::updates<Args...>) (a whole batch)");

  static constexpr std::size_t k_update_bytes = detail::k_update_bytes<Args...>;

public:
  /// Bytes of updates buffered per destination before they are sent: large enough that a
  /// batch's fixed costs (a message head, an activity) vanish per update, small enough that a
  /// few hundred destinations' buffers stay in the caches.
  static constexpr std::size_t k_default_bytes_per_place = 8192;

  aggregator(aggregator&& other) noexcept
      : m_messages(other.m_messages), m_capacity(other.m_capacity),
        m_relay_capacity(other.m_relay_capacity), m_finish(std::exchange(other.m_finish, nullptr)),
        m_places(std::exchange(other.m_places, 0)), m_buffers(std::move(other.m_buffers)),
        m_relays(std::move(other.m_relays)) {}
  aggregator& operator=(aggregator&&) = delete;
  aggregator(const aggregator&) = delete;
  aggregator& operator=(const aggregator&) = delete;
  /// @brief Sends what is left. An update that cannot be sent (out of memory) ends the process
  /// with a message rather than being lost.
  ~aggregator() {
    if (m_finish == nullptr) return; // moved from
    try {
      send_all();
    } catch (...) {
      std::fputs("apgas::aggregator: could not send the buffered updates at its destruction\n",
                 stderr);
      std::terminate();
    }
  }

  /// @brief Buffers F{}(*target, args...) for target.home(); sends the buffer if it is full.
  /// @throws bad_place if target names no place; std::invalid_argument for a null target.
  [[gnu::always_inline]] void push(const global_ref<T>& target, const Args&... args) {
    // A buffer's target is only ever a checked one (push_slow), so a match needs no check; an
    // unallocated buffer has no room (next == end == null).
    const place_id p = target.home();
    if (p < m_places) [[likely]] {
      buffer& b = m_buffers[p];
      if (static_cast<std::size_t>(b.end - b.next) >= k_update_bytes && b.target == target)
          [[likely]] {
        write(b, args...);
        return;
      }
      // A place reached through an intermediate has no buffer of its own (no room above):
      // its updates go to the intermediate's, under the index of their target there.
      if (relay_buffer* r = b.relay; r != nullptr && b.relay_epoch == r->epoch &&
                                     b.target == target &&
                                     static_cast<std::size_t>(r->end - r->next) >= k_record_bytes) {
        write_relayed(*r, b.relay_index, args...);
        return;
      }
    }
    push_slow(target, args...);
  }

  /// @brief Sends every buffered update now.
  void flush() { send_all(); }

  /// @brief Updates buffered, not sent yet.
  std::size_t pending() const noexcept {
    std::size_t n = 0;
    for (const buffer& b : m_buffers) n += b.used();
    std::size_t relayed = 0;
    for (const auto& [hop, r] : m_relays) relayed += r->used();
    return n / k_update_bytes + relayed / k_record_bytes;
  }

private:
  template <class, class, class...>
  friend struct detail::make_aggregator_awaiter;

  /// An update in a relay buffer: the index of its target in the buffer's table, then its
  /// arguments.
  static constexpr std::size_t k_record_bytes = sizeof(std::uint32_t) + k_update_bytes;
  static_assert(sizeof(global_ref<T>) == detail::k_relay_target_bytes &&
                std::is_trivially_copyable_v<global_ref<T>>);

  aggregator(detail::finish_state& owner, std::size_t bytes_per_place)
      : m_messages(&detail::active_messages::current()),
        m_capacity(std::max<std::size_t>(1, bytes_per_place / k_update_bytes) * k_update_bytes),
        m_relay_capacity(std::max<std::size_t>(1, bytes_per_place / k_record_bytes) *
                         k_record_bytes),
        m_finish(&owner), m_places(m_messages->places()), m_buffers(m_places) {}

  /// Updates for the places reached through one intermediate place, `hop`.
  struct relay_buffer {
    place_id hop = 0;
    /// Counts the buffer's sends: a buffer's relay_index is valid while its epoch is this.
    std::uint64_t epoch = 1;
    std::vector<global_ref<T>> targets; ///< of the updates buffered, by index
    std::unique_ptr<std::byte[]> data;  ///< m_relay_capacity bytes
    std::byte* next = nullptr;
    std::byte* end = nullptr;
    std::size_t used() const noexcept { return static_cast<std::size_t>(next - data.get()); }
  };
  struct buffer {
    global_ref<T> target;              ///< where the buffered updates go
    std::unique_ptr<std::byte[]> data; ///< m_capacity bytes, allocated on the first update
    std::byte* next = nullptr;         ///< where the next update goes
    std::byte* end = nullptr;          ///< data + m_capacity
    relay_buffer* relay = nullptr;     ///< for a place reached through an intermediate
    /// Relayed: `target`'s index in relay->targets, while relay->epoch is relay_epoch.
    std::uint32_t relay_index = 0;
    std::uint64_t relay_epoch = 0;
    std::size_t used() const noexcept { return static_cast<std::size_t>(next - data.get()); }
  };

  [[gnu::noinline]] void push_slow(const global_ref<T>& target, const Args&... args) {
    const place_id p = target.home();
    m_messages->check_place(p);
    if (target == global_ref<T>{})
      throw std::invalid_argument("apgas::aggregator: push to a null global_ref");
    buffer& b = m_buffers[p];
    if (b.relay == nullptr && !b.data) { // the first update for p: direct or relayed?
      const place_id hop = m_messages->relay_hop(p);
      if (hop != p) b.relay = &relay_to(hop);
    }
    if (b.relay != nullptr) {
      relay_buffer& r = *b.relay;
      if (static_cast<std::size_t>(r.end - r.next) < k_record_bytes ||
          (r.targets.size() == k_max_relay_targets && b.relay_epoch != r.epoch))
        send_relay(r);                                      // full
      if (b.relay_epoch != r.epoch || b.target != target) { // a new target in this buffer
        b.relay_index = static_cast<std::uint32_t>(r.targets.size());
        r.targets.push_back(target);
        b.target = target;
        b.relay_epoch = r.epoch;
      }
      write_relayed(r, b.relay_index, args...);
      return;
    }
    if (b.used() != 0) send(p); // full, or for another target at that place
    if (!b.data) {
      b.data = std::make_unique<std::byte[]>(m_capacity);
      b.next = b.data.get();
      b.end = b.next + m_capacity;
    }
    b.target = target;
    write(b, args...);
  }

  [[gnu::always_inline]] static void write(buffer& b, const Args&... args) noexcept {
    std::byte* at = b.next;
    ((std::memcpy(at, std::addressof(args), sizeof args), at += sizeof args), ...);
    b.next = at;
  }

  [[gnu::always_inline]] static void write_relayed(relay_buffer& r, std::uint32_t index,
                                                   const Args&... args) noexcept {
    std::byte* at = r.next;
    std::memcpy(at, &index, sizeof index);
    at += sizeof index;
    ((std::memcpy(at, std::addressof(args), sizeof args), at += sizeof args), ...);
    r.next = at;
  }

  /// The relay buffer through `hop`, allocated on its first use.
  relay_buffer& relay_to(place_id hop) {
    std::unique_ptr<relay_buffer>& r = m_relays[hop];
    if (r == nullptr) {
      auto made = std::make_unique<relay_buffer>();
      made->hop = hop;
      made->data = std::make_unique<std::byte[]>(m_relay_capacity);
      made->next = made->data.get();
      made->end = made->next + m_relay_capacity;
      r = std::move(made);
    }
    return *r;
  }

  void send_all() {
    for (place_id p = 0; p < m_places; ++p)
      if (m_buffers[p].used() != 0) send(p);
    for (auto& [hop, r] : m_relays)
      if (r->used() != 0) send_relay(*r);
  }

  /// What runs a batch where it arrives, registered (a code offset names it in the message).
  static constexpr detail::batch_invoker registered_batch_run() noexcept {
    constexpr auto run = &detail::run_update_batch<F, T, Args...>;
    (void)detail::registered_entry<run, detail::code_kind::batch>::value;
    return run;
  }

  /// One relay batch to an intermediate place (see places/src/batch_relay.hpp), counted by the
  /// finish as one activity sent there, emptied once sent as send() does.
  void send_relay(relay_buffer& r) {
    constexpr detail::batch_invoker run = registered_batch_run();
    std::vector<std::byte>& bytes = m_messages->start_relay(
        *m_finish, run, static_cast<std::uint32_t>(k_update_bytes),
        static_cast<std::uint32_t>(std::min<std::size_t>(m_capacity, UINT32_MAX)),
        static_cast<std::uint32_t>(r.targets.size()));
    byte_writer w(bytes);
    w.write_bytes(r.targets.data(), r.targets.size() * sizeof(global_ref<T>));
    w.write_bytes(r.data.get(), r.used());
    m_messages->send_async(*m_finish, r.hop, bytes);
    r.next = r.data.get();
    r.targets.clear();
    ++r.epoch;
    count_batch_toward_poll();
  }

  /// A stream of batches pushes nothing on the deque: poll the network every few batches.
  static void count_batch_toward_poll() noexcept {
    if (detail::worker* self = detail::t_worker) self->count_toward_poll(k_pushes_per_batch);
  }

  /// One batch: a message that runs run_update_batch (target, then the updates' bytes), counted
  /// by the finish as one activity. The buffer is emptied only once the batch is sent: if
  /// sending throws, its updates stay buffered.
  void send(place_id p) {
    constexpr detail::batch_invoker run = registered_batch_run();
    buffer& b = m_buffers[p];
    std::vector<std::byte>& bytes = m_messages->start_batch(*m_finish, run);
    byte_writer w(bytes);
    serialize(w, b.target);
    w.write_bytes(b.data.get(), b.used());
    m_messages->send_async(*m_finish, p, bytes);
    b.next = b.data.get();
    count_batch_toward_poll();
  }

  /// Targets a relay buffer names at most (its updates' indices stay small).
  static constexpr std::size_t k_max_relay_targets = 1u << 16;
  /// What a batch sent counts toward the worker's next busy poll (see worker::push).
  static constexpr std::uint32_t k_pushes_per_batch = detail::worker::k_busy_poll_pushes / 4;

  detail::active_messages* m_messages;
  std::size_t m_capacity;         ///< bytes per buffer, a whole number of updates
  std::size_t m_relay_capacity;   ///< bytes per relay buffer, a whole number of records
  detail::finish_state* m_finish; ///< the owner's; null once moved from
  place_id m_places;              ///< m_buffers.size(); 0 once moved from
  std::vector<buffer> m_buffers;  ///< by destination place
  /// By intermediate place (at most about sqrt(P)); a buffer's relay points into one.
  std::unordered_map<place_id, std::unique_ptr<relay_buffer>> m_relays;
};

/// @brief The updates of one batch as they arrived, for an F that takes a whole batch
/// (`F{}(T&, apgas::updates<Args...>)`): an input range whose elements are the updates'
/// arguments, read from the received bytes (a value for one argument, else a std::tuple).
/// Valid during the call only.
template <class... Args>
class updates {
  static constexpr std::size_t k_bytes = detail::k_update_bytes<Args...>;

public:
  using value_type =
      std::conditional_t<sizeof...(Args) == 1, std::tuple_element_t<0, std::tuple<Args...>>,
                         std::tuple<Args...>>;
  class iterator {
  public:
    using value_type = updates::value_type;
    using difference_type = std::ptrdiff_t;
    iterator() = default;
    explicit iterator(const std::byte* at) noexcept : m_at(at) {}
    [[gnu::always_inline]] value_type operator*() const noexcept {
      if constexpr (sizeof...(Args) == 1) {
        value_type v;
        std::memcpy(&v, m_at, sizeof v);
        return v;
      } else {
        return detail::read_update<Args...>(m_at);
      }
    }
    iterator& operator++() noexcept {
      m_at += k_bytes;
      return *this;
    }
    iterator operator++(int) noexcept {
      iterator old = *this;
      m_at += k_bytes;
      return old;
    }
    friend bool operator==(const iterator&, const iterator&) = default;

  private:
    const std::byte* m_at = nullptr;
  };

  explicit updates(std::span<const std::byte> bytes) noexcept : m_bytes(bytes) {}
  iterator begin() const noexcept { return iterator(m_bytes.data()); }
  iterator end() const noexcept { return iterator(m_bytes.data() + m_bytes.size()); }
  /// @brief The number of updates.
  std::size_t size() const noexcept { return m_bytes.size() / k_bytes; }

private:
  std::span<const std::byte> m_bytes; ///< a whole number of updates
};

} // namespace apgas
