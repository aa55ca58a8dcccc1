// Unit tests of the transport layer on the in-process fake network (no MPI): coalescing,
// flush interval, merged messages, ordering, exactly-once delivery under reordering, back-pressure,
// loopback, corrupt frames, re-entrant handlers, barrier and quiescence.
#include "apgas/detail/transport.hpp"

#include "coalescer.hpp"
#include "fake_transport.hpp"
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <thread>
#include <vector>

// ---- allocation counting (global operator new replacement) -----------------------------------

namespace {
// relaxed: a statistic read after the measured code ran on this thread.
std::atomic<std::uint64_t> g_allocations{0};
} // namespace

// GCC sees malloc in new and free in delete and warns of a mismatch it cannot see is paired.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace {

using namespace apgas::detail;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto k_deadline = 30s; // generous: only a hang should ever reach it

/// options::flush_us for a flush interval of `interval`.
unsigned flush_us(std::chrono::microseconds interval) {
  return static_cast<unsigned>(interval.count());
}

/// The payload of most tests: who sent it, from which thread, its sequence number.
struct record {
  std::uint32_t source;
  std::uint32_t thread;
  std::uint64_t seq;
  std::uint64_t check; ///< a function of the fields above: detects corruption
};

std::uint64_t checksum(std::uint32_t source, std::uint32_t thread, std::uint64_t seq) {
  return (seq * 0x9e3779b97f4a7c15ull) ^ (std::uint64_t{source} << 40) ^ (thread * 7919ull);
}

std::array<std::byte, sizeof(record)> encode(std::uint32_t source, std::uint32_t thread,
                                             std::uint64_t seq) {
  const record r{source, thread, seq, checksum(source, thread, seq)};
  std::array<std::byte, sizeof(record)> out;
  std::memcpy(out.data(), &r, sizeof r);
  return out;
}

record decode(std::span<const std::byte> m) {
  EXPECT_EQ(m.size(), sizeof(record));
  record r{};
  std::memcpy(&r, m.data(), std::min(m.size(), sizeof r));
  EXPECT_EQ(r.check, checksum(r.source, r.thread, r.seq)) << "payload corrupted";
  return r;
}

/// Polls `net` until `done()` or the deadline; returns done().
template <class Done>
bool poll_until(fake_network& net, Done done) {
  const auto deadline = clock_type::now() + k_deadline;
  while (!done() && clock_type::now() < deadline) net.poll_all();
  return done();
}

template <class Done>
bool poll_until(transport& t, Done done) {
  const auto deadline = clock_type::now() + k_deadline;
  while (!done() && clock_type::now() < deadline)
    if (t.poll() == 0) std::this_thread::yield();
  return done();
}

void ignore_all(transport& t) {
  t.set_handler([](place_id, std::span<const std::byte>) {});
}

// ---- coalescing -----------------------------------------------------------------------------

TEST(fake_transport, coalesces_small_messages) {
  fake_network net(2);
  transport& a = net.endpoint(0);
  transport& b = net.endpoint(1);
  ignore_all(a);
  std::uint64_t got = 0;
  b.set_handler([&](place_id from, std::span<const std::byte> m) {
    EXPECT_EQ(from, 0u);
    EXPECT_EQ(decode(m).seq, got);
    ++got;
  });
  constexpr std::uint64_t k_messages = 1000;
  for (std::uint64_t i = 0; i < k_messages; ++i) a.send(1, encode(0, 0, i));
  a.flush();
  ASSERT_TRUE(poll_until(net, [&] { return got == k_messages; }));

  const transport_stats sa = a.stats();
  const transport_stats sb = b.stats();
  EXPECT_EQ(sa.logical_messages_sent, k_messages);
  EXPECT_EQ(sa.mpi_messages_sent, 1u); // 1000 * 28 bytes fit one 64 KiB buffer
  EXPECT_EQ(sb.logical_messages_received, k_messages);
  EXPECT_EQ(sb.mpi_messages_received, sa.mpi_messages_sent);
  EXPECT_EQ(sb.bytes_received, sa.bytes_sent);
  EXPECT_EQ(sa.bytes_sent, k_messages * (k_frame_header + sizeof(record)));
  std::cout << "[ ratio    ] 64 KiB buffers: " << sa.logical_messages_sent << " logical in "
            << sa.mpi_messages_sent << " network messages\n";
}

TEST(fake_transport, full_buffers_leave_without_flush) {
  apgas::options options;
  options.coalesce_bytes = 1024;
  options.flush_us = flush_us(1h); // only fullness may send
  fake_network net(2, options);
  ignore_all(net.endpoint(0));
  std::uint64_t got = 0;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    EXPECT_EQ(decode(m).seq, got);
    ++got;
  });
  constexpr std::uint64_t k_messages = 1000;
  for (std::uint64_t i = 0; i < k_messages; ++i) net.endpoint(0).send(1, encode(0, 0, i));
  constexpr std::uint64_t k_per_buffer = 1024 / (k_frame_header + sizeof(record)); // 32
  constexpr std::uint64_t k_full = k_messages / k_per_buffer;
  ASSERT_TRUE(poll_until(net, [&] { return got == k_full * k_per_buffer; }));
  EXPECT_EQ(net.endpoint(0).stats().mpi_messages_sent, k_full);
  net.endpoint(0).flush(); // the partial last buffer
  ASSERT_TRUE(poll_until(net, [&] { return got == k_messages; }));
  const transport_stats s = net.endpoint(0).stats();
  EXPECT_EQ(s.mpi_messages_sent, k_full + 1);
  std::cout << "[ ratio    ] 1 KiB buffers: " << s.logical_messages_sent << " logical in "
            << s.mpi_messages_sent << " network messages\n";
}

TEST(fake_transport, buffers_shrink_to_fit_the_memory_budget_at_many_places) {
  // Each destination may hold 1 + k_pool_per_destination buffers: 5 per place.
  apgas::options o;
  EXPECT_EQ(coalescer::fitted_buffer_bytes(2, o), o.coalesce_bytes) << "few places: as asked";
  EXPECT_EQ(coalescer::fitted_buffer_bytes(4096, o), (std::size_t{256} << 20) / (4096 * 5));
  EXPECT_EQ(coalescer::fitted_buffer_bytes(1'000'000, o), coalescer::k_min_fitted_buffer_bytes)
      << "never below the floor";
  o.coalesce_bytes = 256;
  EXPECT_EQ(coalescer::fitted_buffer_bytes(1'000'000, o), 256U) << "never above what was asked";

  // 64 places, 1 MiB for all buffers: 3,276 bytes per destination, and full buffers leave at
  // that size.
  apgas::options options;
  options.coalesce_memory_mib = 1;
  options.flush_us = flush_us(1h); // only fullness may send
  constexpr std::size_t k_fitted = (std::size_t{1} << 20) / (64 * 5);
  fake_network net(64, options);
  for (place_id p = 0; p < 64; ++p) ignore_all(net.endpoint(p));
  std::uint64_t got = 0;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte>) { ++got; });
  EXPECT_EQ(net.endpoint(0).stats().buffer_bytes, k_fitted);
  constexpr std::uint64_t k_messages = 1000;
  for (std::uint64_t i = 0; i < k_messages; ++i) net.endpoint(0).send(1, encode(0, 0, i));
  constexpr std::uint64_t k_per_buffer = k_fitted / (k_frame_header + sizeof(record));
  constexpr std::uint64_t k_full = k_messages / k_per_buffer;
  ASSERT_TRUE(poll_until(net, [&] { return got == k_full * k_per_buffer; }));
  EXPECT_EQ(net.endpoint(0).stats().mpi_messages_sent, k_full);
  EXPECT_LE(net.endpoint(0).stats().bytes_sent, k_full * k_fitted);
  net.endpoint(0).flush();
  ASSERT_TRUE(poll_until(net, [&] { return got == k_messages; }));
}

TEST(fake_transport, without_coalescing_every_send_is_a_network_message) {
  apgas::options options;
  options.coalesce = false;
  fake_network net(2, options);
  ignore_all(net.endpoint(0));
  std::uint64_t got = 0;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    EXPECT_EQ(decode(m).seq, got);
    ++got;
  });
  for (std::uint64_t i = 0; i < 100; ++i) net.endpoint(0).send(1, encode(0, 0, i));
  ASSERT_TRUE(poll_until(net, [&] { return got == 100; }));
  EXPECT_EQ(net.endpoint(0).stats().mpi_messages_sent, 100u);
}

TEST(fake_transport, coalescing_switches_off_and_on_again_in_order) {
  fake_network net(2);
  transport& a = net.endpoint(0);
  ignore_all(a);
  std::uint64_t got = 0;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    EXPECT_EQ(decode(m).seq, got); // in order across the switches
    ++got;
  });
  std::uint64_t seq = 0;
  const auto send_some = [&](std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) a.send(1, encode(0, 0, seq++));
  };
  send_some(100); // buffered
  a.set_coalescing(false);
  send_some(10); // one network message each, behind the buffered 100 (which leave first)
  a.set_coalescing(true);
  send_some(100);
  a.flush();
  ASSERT_TRUE(poll_until(net, [&] { return got == seq; }));
  // 100 in one buffer, sealed with the first of the 10 (a buffer started while coalescing is
  // on), then 9 alone, then the last 100 in one buffer.
  EXPECT_EQ(a.stats().mpi_messages_sent, 11u);
}

TEST(fake_transport, flush_interval_sends_without_explicit_flush) {
  apgas::options options;
  constexpr auto k_interval = 20ms;
  options.flush_us = flush_us(k_interval);
  fake_network net(2, options);
  ignore_all(net.endpoint(0));
  std::uint64_t got = 0;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte>) { ++got; });
  const auto t0 = clock_type::now();
  net.endpoint(0).send(1, encode(0, 0, 0));
  net.poll_all();
  // Before the interval nothing may leave (checked only if we really are still before it).
  if (clock_type::now() - t0 < k_interval) {
    EXPECT_EQ(got, 0u);
  }
  ASSERT_TRUE(poll_until(net, [&] { return got == 1; })); // no flush(), no sleep
  EXPECT_GE(clock_type::now() - t0, k_interval);
  EXPECT_EQ(net.endpoint(0).stats().mpi_messages_sent, 1u);
}

TEST(fake_transport, steady_state_allocates_nothing_per_message) {
  apgas::options options;
  options.coalesce_bytes = 4096;
  fake_network net(2, options);
  ignore_all(net.endpoint(0));
  std::uint64_t got = 0;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte>) { ++got; });
  // A sender that polls now and then, so that buffers come back before the pool runs dry.
  auto round = [&](std::uint64_t n) {
    const std::uint64_t target = got + n;
    for (std::uint64_t i = 0; i < n; ++i) {
      net.endpoint(0).send(1, encode(0, 0, i));
      if (i % 64 == 0) net.poll_all();
    }
    net.endpoint(0).flush();
    ASSERT_TRUE(poll_until(net, [&] { return got == target; }));
  };
  round(20000); // warm up: pools, queues and vectors reach their working size
  const std::uint64_t before = g_allocations.load(std::memory_order_relaxed);
  round(20000);
  const std::uint64_t allocations = g_allocations.load(std::memory_order_relaxed) - before;
  const std::uint64_t buffers = net.endpoint(0).stats().mpi_messages_sent / 2;
  std::cout << "[ alloc    ] " << allocations << " allocations for 20000 messages in about "
            << buffers << " network messages\n";
  EXPECT_LE(allocations, 4u);
}

// ---- merged messages ------------------------------------------------------------------------

/// A merge_head whose first byte is `tag` (the rest zero).
merge_head head_of(std::uint8_t tag) {
  merge_head h{};
  h[0] = std::byte{tag};
  return h;
}

/// send_merged of an 8-byte body holding `value`.
void send_value(transport& t, place_id to, const merge_head& head, std::uint64_t value) {
  t.send_merged(
      to, head, sizeof value,
      [](std::byte* at, const void* context) noexcept {
        std::memcpy(at, context, sizeof(std::uint64_t));
      },
      &value);
}

/// What a receiver of merged messages saw: per message, its head's tag and its bodies.
struct merged_message {
  std::uint8_t tag;
  std::vector<std::uint64_t> values;
  bool operator==(const merged_message&) const = default;
};

void record_merged(transport& t, std::vector<merged_message>& seen) {
  t.set_handler([&seen](place_id, std::span<const std::byte> m) {
    ASSERT_GE(m.size(), sizeof(merge_head));
    const std::span<const std::byte> bodies = m.subspan(sizeof(merge_head));
    ASSERT_EQ(bodies.size() % sizeof(std::uint64_t), 0u) << "a body was cut";
    merged_message got{static_cast<std::uint8_t>(m[0]), {}};
    for (std::size_t at = 0; at < bodies.size(); at += sizeof(std::uint64_t)) {
      std::uint64_t v;
      std::memcpy(&v, bodies.data() + at, sizeof v);
      got.values.push_back(v);
    }
    seen.push_back(std::move(got));
  });
}

/// Two places: place 0 sends (a), place 1 records what arrives (seen).
struct merged_pair {
  explicit merged_pair(const apgas::options& options = {}) : net(2, options) {
    ignore_all(a);
    record_merged(net.endpoint(1), seen);
  }
  fake_network net;
  transport& a = net.endpoint(0);
  std::vector<merged_message> seen;
};

TEST(fake_transport, merged_messages_arrive_as_one_head_and_their_bodies_in_order) {
  merged_pair p;
  auto& [net, a, seen] = p;
  for (std::uint64_t i = 0; i < 100; ++i) send_value(a, 1, head_of(1), i);
  a.send(1, head_of(9)); // anything else in between ends the merging: order is kept
  for (std::uint64_t i = 100; i < 110; ++i) send_value(a, 1, head_of(1), i);
  for (std::uint64_t i = 110; i < 115; ++i) send_value(a, 1, head_of(2), i); // another head
  for (std::uint64_t i = 115; i < 120; ++i) send_value(a, 1, head_of(1), i);
  a.flush();
  ASSERT_TRUE(poll_until(net, [&] { return seen.size() >= 5; }));

  const auto range = [](std::uint64_t from, std::uint64_t to) {
    std::vector<std::uint64_t> v;
    for (std::uint64_t i = from; i < to; ++i) v.push_back(i);
    return v;
  };
  const std::vector<merged_message> expected{{1, range(0, 100)},
                                             {9, {}},
                                             {1, range(100, 110)},
                                             {2, range(110, 115)},
                                             {1, range(115, 120)}};
  EXPECT_EQ(seen, expected);
  const transport_stats sa = a.stats();
  EXPECT_EQ(sa.logical_messages_sent, 121u);                        // one per call
  EXPECT_EQ(net.endpoint(1).stats().logical_messages_received, 5u); // one per merged message
  EXPECT_EQ(sa.mpi_messages_sent, 1u);
  // Each merged message pays for its frame and head once, each body for itself only.
  EXPECT_EQ(sa.bytes_sent, 5 * (k_frame_header + sizeof(merge_head)) + 120 * sizeof(std::uint64_t));
}

TEST(fake_transport, merged_messages_never_outgrow_a_buffer) {
  apgas::options options;
  options.coalesce_bytes = 256; // a frame header, a head and 27 bodies
  options.flush_us = flush_us(1h);
  merged_pair p(options);
  auto& [net, a, seen] = p;
  constexpr std::uint64_t k_values = 1000;
  for (std::uint64_t i = 0; i < k_values; ++i) send_value(a, 1, head_of(1), i);
  a.flush();
  std::uint64_t next = 0;
  ASSERT_TRUE(poll_until(net, [&] {
    for (; !seen.empty() && next < k_values; seen.erase(seen.begin())) {
      const merged_message& m = seen.front();
      EXPECT_LE(k_frame_header + sizeof(merge_head) + m.values.size() * sizeof(std::uint64_t),
                options.coalesce_bytes);
      EXPECT_EQ(m.values.size(), std::min<std::uint64_t>(27, k_values - next))
          << "a buffer left half empty";
      for (const std::uint64_t v : m.values) EXPECT_EQ(v, next++);
    }
    return next == k_values;
  }));
  EXPECT_EQ(a.stats().mpi_messages_sent, (k_values + 26) / 27); // one merged message each
}

TEST(fake_transport, without_coalescing_merged_messages_leave_alone) {
  apgas::options options;
  options.coalesce = false;
  merged_pair p(options);
  auto& [net, a, seen] = p;
  for (std::uint64_t i = 0; i < 10; ++i) send_value(a, 1, head_of(1), i);
  ASSERT_TRUE(poll_until(net, [&] { return seen.size() == 10; }));
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ(seen[i], (merged_message{1, {i}}));
  EXPECT_EQ(a.stats().mpi_messages_sent, 10u);
}

TEST(fake_transport, switching_coalescing_off_lets_a_buffered_merged_message_leave) {
  merged_pair p;
  auto& [net, a, seen] = p;
  for (std::uint64_t i = 0; i < 5; ++i) send_value(a, 1, head_of(1), i); // buffered
  a.set_coalescing(false);
  for (std::uint64_t i = 5; i < 8; ++i) send_value(a, 1, head_of(1), i); // no flush needed
  ASSERT_TRUE(poll_until(net, [&] { return seen.size() == 3; }));
  const std::vector<merged_message> expected{{1, {0, 1, 2, 3, 4, 5}}, {1, {6}}, {1, {7}}};
  EXPECT_EQ(seen, expected);
}

// ---- ordering and exactly-once --------------------------------------------------------------

TEST(fake_transport, per_source_fifo_while_sources_interleave) {
  apgas::options options;
  options.coalesce_bytes = 256; // many network messages
  constexpr place_id k_places = 4;
  constexpr place_id k_sink = k_places - 1;
  constexpr std::uint64_t k_messages = 20000;
  fake_network net(k_places, options, /*seed=*/42, /*reorder=*/true);
  std::vector<std::uint64_t> next(k_places, 0);
  std::uint64_t got = 0;
  net.endpoint(k_sink).set_handler([&](place_id from, std::span<const std::byte> m) {
    const record r = decode(m);
    EXPECT_EQ(r.source, from);
    EXPECT_EQ(r.seq, next[from]) << "out of order from place " << from;
    next[from] = r.seq + 1;
    ++got;
  });
  std::vector<std::thread> threads;
  for (place_id p = 0; p < k_sink; ++p) {
    ignore_all(net.endpoint(p));
    threads.emplace_back([&, p] {
      transport& t = net.endpoint(p);
      for (std::uint64_t i = 0; i < k_messages; ++i) {
        t.send(k_sink, encode(p, 0, i));
        if (i % 64 == 0) t.poll();
      }
      t.barrier();
    });
  }
  threads.emplace_back([&] {
    transport& t = net.endpoint(k_sink);
    EXPECT_TRUE(poll_until(t, [&] { return got == k_messages * k_sink; }));
    t.barrier();
  });
  for (auto& th : threads) th.join();
  for (place_id p = 0; p < k_sink; ++p) EXPECT_EQ(next[p], k_messages);
  EXPECT_GT(net.endpoint(0).stats().mpi_messages_sent, 100u);
}

TEST(fake_transport, send_now_leaves_at_once_and_alone) {
  fake_network net(2, apgas::options{});
  std::uint64_t got = 0;
  ignore_all(net.endpoint(0));
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    EXPECT_EQ(decode(m).seq, got);
    ++got;
  });
  transport& sender = net.endpoint(0);
  for (std::uint64_t i = 0; i < 10; ++i) {
    sender.send_now(1, encode(0, 0, i)); // no flush: it must have left already
    EXPECT_TRUE(poll_until(net.endpoint(1), [&] { return got == i + 1; }));
  }
  EXPECT_EQ(sender.stats().mpi_messages_sent, 10u);
  // Behind buffered messages it leaves with them, in order.
  sender.send(1, encode(0, 0, 10));
  sender.send(1, encode(0, 0, 11));
  sender.send_now(1, encode(0, 0, 12));
  EXPECT_TRUE(poll_until(net.endpoint(1), [&] { return got == 13; }));
  EXPECT_EQ(sender.stats().mpi_messages_sent, 11u);
  EXPECT_THROW(sender.send_now(2, encode(0, 0, 0)), std::out_of_range);
}

TEST(fake_transport, send_now_framed_sends_what_follows_the_room_for_the_header) {
  // (The fake network copies a framed message, so the caller keeps its vector; the MPI
  // transport's own paths are tested under mpiexec: places_test, an_at_moves_big_...)
  fake_network net(2, apgas::options{});
  std::vector<std::vector<std::byte>> got;
  ignore_all(net.endpoint(0));
  net.endpoint(1).set_handler(
      [&](place_id, std::span<const std::byte> m) { got.emplace_back(m.begin(), m.end()); });
  transport& sender = net.endpoint(0);
  const auto framed_message = [](std::size_t bytes, std::uint8_t fill) {
    std::vector<std::byte> v(k_frame_header + bytes, std::byte{fill});
    v.front() = std::byte{0xee}; // room for the header: any value
    return v;
  };
  const auto expected = [](std::size_t bytes, std::uint8_t fill) {
    return std::vector<std::byte>(bytes, std::byte{fill});
  };
  // Alone: leaves at once, without a flush.
  std::vector<std::byte> framed = framed_message(100, 1);
  sender.send_now_framed(1, framed);
  EXPECT_TRUE(poll_until(net.endpoint(1), [&] { return got.size() == 1; }));
  framed = framed_message(64 * 1024, 2);
  sender.send_now_framed(1, framed);
  EXPECT_TRUE(poll_until(net.endpoint(1), [&] { return got.size() == 2; }));
  EXPECT_EQ(got[0], expected(100, 1));
  EXPECT_EQ(got[1], expected(64 * 1024, 2));
  EXPECT_EQ(sender.stats().mpi_messages_sent, 2u);
  // Sent past the coalescer (nothing was outstanding to place 1), and still counted: logical
  // messages, and outstanding bytes until the send completed (none are left, and none owed).
  EXPECT_EQ(sender.stats().logical_messages_sent, 2u);
  EXPECT_TRUE(sender.quiescent());
  // Behind a buffered message: it leaves with it, behind it.
  sender.send(1, encode(0, 0, 0));
  framed = framed_message(8 * 1024, 3);
  sender.send_now_framed(1, framed);
  EXPECT_TRUE(poll_until(net.endpoint(1), [&] { return got.size() == 4; }));
  EXPECT_EQ(decode(got[2]).seq, 0u);
  EXPECT_EQ(got[3], expected(8 * 1024, 3));
  EXPECT_EQ(sender.stats().mpi_messages_sent, 3u);
  EXPECT_EQ(sender.stats().logical_messages_sent, 4u);
  EXPECT_TRUE(sender.quiescent());
  EXPECT_THROW(sender.send_now_framed(2, framed), std::out_of_range);
}

TEST(fake_transport, send_now_mixed_with_send_keeps_per_thread_order) {
  // Threads of one place interleave send and send_now to one sink over a reordering network
  // with a send cap of 2, so that send_now meets buffered and deferred messages alike.
  apgas::options options;
  options.coalesce_bytes = 256;
  options.max_outstanding_sends = 2;
  constexpr std::uint32_t k_threads = 3;
  constexpr std::uint64_t k_messages = 3000;
  fake_network net(2, options, /*seed=*/7, /*reorder=*/true);
  std::vector<std::uint64_t> next(k_threads, 0);
  std::uint64_t got = 0;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    const record r = decode(m);
    ASSERT_LT(r.thread, k_threads);
    EXPECT_EQ(r.seq, next[r.thread]) << "out of order from thread " << r.thread;
    next[r.thread] = r.seq + 1;
    ++got;
  });
  ignore_all(net.endpoint(0));
  std::vector<std::thread> threads;
  for (std::uint32_t th = 0; th < k_threads; ++th) {
    threads.emplace_back([&, th] {
      transport& t = net.endpoint(0);
      for (std::uint64_t i = 0; i < k_messages; ++i) {
        if ((i + th) % 3 == 0) t.send_now(1, encode(0, th, i));
        else t.send(1, encode(0, th, i));
      }
    });
  }
  std::thread sink([&] {
    EXPECT_TRUE(poll_until(net.endpoint(1), [&] { return got == k_threads * k_messages; }));
  });
  for (auto& th : threads) th.join();
  net.endpoint(0).flush();
  std::thread sender_progress([&] {
    EXPECT_TRUE(poll_until(net.endpoint(0), [&] { return net.endpoint(0).quiescent(); }));
  });
  sink.join();
  sender_progress.join();
  for (std::uint32_t th = 0; th < k_threads; ++th) EXPECT_EQ(next[th], k_messages);
}

TEST(fake_transport, send_now_never_overtakes_what_its_sender_has_seen_sent) {
  // Thread 0 sends plain messages and publishes how many it sent; thread 1 then sends, with
  // send_now, the count it saw. Whatever thread 0 sent before that count (buffered, sealed,
  // or waiting for room under a send cap of 2) must arrive first: order of sending across
  // threads is the order their synchronisation gives.
  apgas::options options;
  options.coalesce_bytes = 128;
  options.max_outstanding_sends = 2;
  constexpr std::uint64_t k_messages = 20000;
  fake_network net(2, options);
  std::uint64_t plain_received = 0;
  std::uint64_t checked = 0;
  bool done = false;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    const record r = decode(m);
    if (r.thread == 0) {
      EXPECT_EQ(r.seq, plain_received);
      plain_received = r.seq + 1;
      done = plain_received == k_messages;
    } else {
      EXPECT_LE(r.seq, plain_received) << "a send_now overtook a message sent before it";
      ++checked;
    }
  });
  ignore_all(net.endpoint(0));
  std::atomic<std::uint64_t> sent{0};
  std::atomic<bool> stop{false};
  std::thread plain([&] {
    transport& t = net.endpoint(0);
    for (std::uint64_t i = 0; i < k_messages; ++i) {
      t.send(1, encode(0, 0, i));
      sent.store(i + 1, std::memory_order_release); // after the send returned
    }
    t.flush();
  });
  std::atomic<bool> urgent_done{false};
  std::thread urgent([&] {
    transport& t = net.endpoint(0);
    while (!stop.load(std::memory_order_acquire))
      t.send_now(1, encode(0, 1, sent.load(std::memory_order_acquire)));
    urgent_done.store(true, std::memory_order_release);
  });
  EXPECT_TRUE(poll_until(net.endpoint(1), [&] { return done; }));
  stop.store(true, std::memory_order_release);
  // Keep receiving until the urgent sender stopped: it may be waiting for room meanwhile.
  EXPECT_TRUE(
      poll_until(net.endpoint(1), [&] { return urgent_done.load(std::memory_order_acquire); }));
  plain.join();
  urgent.join();
  EXPECT_GT(checked, 0u);
}

void exactly_once(std::uint64_t seed, bool same_source) {
  apgas::options options;
  options.coalesce_bytes = 512;
  options.max_outstanding_bytes = std::size_t{16} * 1024;
  constexpr place_id k_places = 4;
  constexpr std::uint32_t k_threads = 3;     // per place: the polling thread and two senders
  constexpr std::uint64_t k_messages = 2000; // per thread and destination
  constexpr std::uint64_t k_expected = std::uint64_t{k_places} * k_threads * k_messages;
  fake_network net(k_places, options, seed, /*reorder=*/true, same_source);

  struct place_state {
    std::vector<std::uint8_t> seen = std::vector<std::uint8_t>(k_expected, 0);
    std::uint64_t got = 0; // handler calls are serialised by the poll lock
    std::atomic<std::uint64_t> got_published{0};
  };
  std::vector<place_state> state(k_places);
  for (place_id p = 0; p < k_places; ++p) {
    net.endpoint(p).set_handler([&, p](place_id from, std::span<const std::byte> m) {
      const record r = decode(m);
      EXPECT_EQ(r.source, from);
      const std::uint64_t index = (r.source * k_threads + r.thread) * k_messages + r.seq;
      ASSERT_LT(index, k_expected);
      ++state[p].seen[index];
      ++state[p].got;
      // relaxed: progress indicator only; the final check runs after join().
      state[p].got_published.store(state[p].got, std::memory_order_relaxed);
    });
  }
  auto send_share = [&](place_id p, std::uint32_t thread) {
    transport& t = net.endpoint(p);
    for (std::uint64_t i = 0; i < k_messages; ++i)
      for (place_id to = 0; to < k_places; ++to) t.send(to, encode(p, thread, i));
  };
  std::vector<std::thread> threads;
  for (place_id p = 0; p < k_places; ++p) {
    for (std::uint32_t th = 1; th < k_threads; ++th) threads.emplace_back(send_share, p, th);
    threads.emplace_back([&, p] {
      transport& t = net.endpoint(p);
      send_share(p, 0);
      EXPECT_TRUE(poll_until(
          t, [&] { return state[p].got_published.load(std::memory_order_relaxed) == k_expected; }));
      // This place's last sends complete in a poll of its own, once their places took them.
      EXPECT_TRUE(poll_until(t, [&] { return t.quiescent(); }));
      t.barrier();
    });
  }
  for (auto& th : threads) th.join();
  for (place_id p = 0; p < k_places; ++p) {
    EXPECT_EQ(state[p].got, k_expected);
    std::uint64_t wrong = 0;
    for (std::uint8_t s : state[p].seen) wrong += (s != 1);
    EXPECT_EQ(wrong, 0u) << "place " << p << ": messages lost or duplicated";
    EXPECT_TRUE(net.endpoint(p).quiescent());
    const transport_stats s = net.endpoint(p).stats();
    EXPECT_EQ(s.logical_messages_sent, k_expected);
    EXPECT_EQ(s.logical_messages_received, k_expected);
  }
}

TEST(fake_transport, exactly_once_with_sources_reordered) {
  for (std::uint64_t seed : {1u, 2u, 3u}) exactly_once(seed, false);
}

TEST(fake_transport, exactly_once_with_everything_reordered) {
  for (std::uint64_t seed : {4u, 5u, 6u}) exactly_once(seed, true);
}

TEST(fake_transport, same_source_reordering_really_reorders) {
  apgas::options options;
  options.coalesce_bytes = 64; // two records per network message
  fake_network net(2, options, /*seed=*/7, /*reorder=*/true, /*reorder_same_source=*/true);
  ignore_all(net.endpoint(0));
  std::vector<std::uint64_t> order;
  net.endpoint(1).set_handler(
      [&](place_id, std::span<const std::byte> m) { order.push_back(decode(m).seq); });
  for (std::uint64_t i = 0; i < 200; ++i) net.endpoint(0).send(1, encode(0, 0, i));
  net.endpoint(0).flush();
  ASSERT_TRUE(poll_until(net, [&] { return order.size() == 200; }));
  bool inverted = false;
  for (std::size_t i = 1; i < order.size(); ++i) inverted |= order[i] < order[i - 1];
  EXPECT_TRUE(inverted) << "reorder_same_source produced FIFO order";
}

// ---- back-pressure --------------------------------------------------------------------------

TEST(fake_transport, back_pressure_bounds_memory_with_a_slow_receiver) {
  apgas::options options;
  options.coalesce_bytes = 1024;
  options.max_outstanding_bytes = 4096;
  fake_network net(2, options);
  constexpr std::uint64_t k_messages = 20000;
  std::atomic<std::uint64_t> got{0};
  ignore_all(net.endpoint(0));
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    // relaxed: the sender thread only reads it after join().
    EXPECT_EQ(decode(m).seq, got.load(std::memory_order_relaxed));
    got.fetch_add(1, std::memory_order_relaxed);
  });
  std::atomic<bool> sender_done{false};
  std::thread sender([&] {
    transport& t = net.endpoint(0);
    for (std::uint64_t i = 0; i < k_messages; ++i) t.send(1, encode(0, 0, i));
    t.flush();
    // release: nothing to publish but the end itself (the receiver re-checks counts anyway).
    sender_done.store(true, std::memory_order_release);
  });
  std::thread receiver([&] {
    transport& t = net.endpoint(1);
    const auto deadline = clock_type::now() + k_deadline;
    // A slow receiver, for certain: it starts taking messages only once the sender had to
    // wait for room (or finished without ever waiting, which the checks below reject). A
    // receiver that merely yielded between polls kept up on an idle machine, so whether the
    // sender ever waited depended on the scheduler.
    // acquire: pairs with the release above.
    while (net.endpoint(0).stats().backpressure_waits == 0 &&
           !sender_done.load(std::memory_order_acquire) && clock_type::now() < deadline)
      std::this_thread::yield();
    while (got.load(std::memory_order_relaxed) < k_messages && clock_type::now() < deadline) {
      t.poll();
      // Still slow: it gives its CPU away between polls (the outcome is decided by counts;
      // the sender had to wait before the first poll, see above). A few yields only: on a busy
      // machine each may cost a time slice.
      for (int i = 0; i < 4; ++i) std::this_thread::yield();
    }
  });
  sender.join();
  receiver.join();
  EXPECT_EQ(got.load(), k_messages);
  const transport_stats s = net.endpoint(0).stats();
  EXPECT_GT(s.backpressure_waits, 0u);
  const std::uint64_t peak = net.peak_queued_bytes(1);
  std::cout << "[ backpres ] peak queued " << peak << " bytes (limit "
            << options.max_outstanding_bytes << "), " << s.backpressure_waits << " waits\n";
  EXPECT_LE(peak, options.max_outstanding_bytes + k_frame_header + sizeof(record));
  EXPECT_TRUE(net.endpoint(0).quiescent());
}

/// Senders on place 0 (`threads` of them, round-robin over places 1..places-1) against slow
/// receivers, without coalescing so that every send is one network message. Checks order,
/// exactly-once delivery, and that the network never held more than the cap of place 0's sends.
void send_cap_with_slow_receivers(place_id places, std::uint32_t threads, std::size_t cap) {
  apgas::options options;
  options.coalesce = false;
  options.max_outstanding_sends = cap; // the byte limit (8 MiB) is never reached here
  fake_network net(places, options);
  // Per thread and destination: hundreds of times the cap, and few enough that the test stays
  // short when the machine is busy (the receivers give their CPU away between polls).
  constexpr std::uint64_t k_messages = 2000;
  ignore_all(net.endpoint(0));
  // Per receiver; handler calls of one endpoint are serialised by its poll lock.
  std::vector<std::vector<std::uint64_t>> next(places, std::vector<std::uint64_t>(threads, 0));
  std::vector<std::atomic<std::uint64_t>> got(places);
  for (place_id p = 1; p < places; ++p)
    net.endpoint(p).set_handler([&, p](place_id from, std::span<const std::byte> m) {
      EXPECT_EQ(from, 0u);
      const record r = decode(m);
      ASSERT_LT(r.thread, threads);
      EXPECT_EQ(r.seq, next[p][r.thread]) << "out of order at place " << p;
      next[p][r.thread] = r.seq + 1;
      // relaxed: the receiver's own loop condition; the final checks run after join().
      got[p].fetch_add(1, std::memory_order_relaxed);
    });
  // relaxed: only ends the receivers' wait below early (a broken cap lets senders finish).
  std::atomic<std::uint32_t> senders_done{0};
  std::vector<std::thread> workers;
  for (std::uint32_t th = 0; th < threads; ++th)
    workers.emplace_back([&, th] {
      transport& t = net.endpoint(0);
      for (std::uint64_t i = 0; i < k_messages; ++i)
        for (place_id to = 1; to < places; ++to) t.send(to, encode(0, th, i));
      t.flush();
      senders_done.fetch_add(1, std::memory_order_relaxed);
    });
  const std::uint64_t expected = k_messages * threads;
  for (place_id p = 1; p < places; ++p)
    workers.emplace_back([&, p] {
      transport& t = net.endpoint(p);
      const auto deadline = clock_type::now() + k_deadline;
      // No receiving at all until the senders filled the cap and had to wait: nothing they sent
      // can complete before, so both must happen, and the checks below do not depend on timing.
      auto filled = [&] {
        const transport_stats s = net.endpoint(0).stats();
        return s.peak_sends_in_flight >= cap && s.backpressure_waits > 0;
      };
      while (!filled() && senders_done.load(std::memory_order_relaxed) < threads &&
             clock_type::now() < deadline)
        std::this_thread::yield();
      EXPECT_TRUE(filled()) << "the senders never filled the cap";
      while (got[p].load(std::memory_order_relaxed) < expected && clock_type::now() < deadline) {
        t.poll();
        // A slow receiver: it gives its CPU away between polls (the outcome is decided by
        // counts, not by time; the cap was filled before the first poll, see above). A few
        // yields only: on a busy machine each may cost a time slice.
        for (int i = 0; i < 4; ++i) std::this_thread::yield();
      }
    });
  for (auto& w : workers) w.join();
  // The last sends complete once their receivers took them; nobody polls place 0 any more, so
  // drive the network until it is quiet (a deadline, not a sleep).
  EXPECT_TRUE(poll_until(net, [&] { return net.endpoint(0).quiescent(); }));
  const transport_stats s = net.endpoint(0).stats();
  std::size_t peak_queued = 0;
  for (place_id p = 1; p < places; ++p) {
    EXPECT_EQ(got[p].load(), expected) << "place " << p;
    // What the network held of place 0's sends towards one place at once (no more than the
    // cap, since the cap is for all destinations together).
    peak_queued = std::max(peak_queued, net.peak_queued_messages(0, p));
  }
  std::cout << "[ sendcap  ] " << threads << " sender(s), " << places - 1 << " receiver(s), cap "
            << cap << ": peak " << s.peak_sends_in_flight << " sends in flight (" << peak_queued
            << " queued at one receiver), " << s.backpressure_waits << " waits, "
            << s.mpi_messages_sent << " network messages\n";
  EXPECT_EQ(s.mpi_messages_sent, expected * (places - 1));
  EXPECT_LE(s.peak_sends_in_flight, cap);
  EXPECT_LE(peak_queued, cap);
  // The cap really was the limit, and senders were held back by it (the byte limit is far).
  EXPECT_EQ(s.peak_sends_in_flight, cap);
  EXPECT_GT(s.backpressure_waits, 0u);
}

TEST(fake_transport, send_cap_bounds_requests_with_a_slow_receiver) {
  send_cap_with_slow_receivers(/*places=*/2, /*threads=*/1, /*cap=*/16);
}

TEST(fake_transport, send_cap_with_several_senders_and_destinations_keeps_order) {
  send_cap_with_slow_receivers(/*places=*/3, /*threads=*/3, /*cap=*/5);
}

TEST(fake_transport, barrier_hands_deferred_sends_to_the_network) {
  // With a cap of one send, almost everything is still waiting for room when place 0 enters
  // the barrier; after it place 0 never polls again, so only the barrier can have sent it.
  apgas::options options;
  options.coalesce = false;
  options.max_outstanding_sends = 1;
  fake_network net(2, options);
  constexpr std::uint64_t k_messages = 200;
  std::uint64_t got = 0; // place 1's thread only
  ignore_all(net.endpoint(0));
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    EXPECT_EQ(decode(m).seq, got);
    ++got;
  });
  std::thread sender([&] {
    transport& t = net.endpoint(0);
    for (std::uint64_t i = 0; i < k_messages; ++i) t.send(1, encode(0, 0, i));
    t.barrier();
  });
  std::thread receiver([&] {
    transport& t = net.endpoint(1);
    t.barrier();
    EXPECT_TRUE(poll_until(t, [&] { return got == k_messages; }));
  });
  sender.join();
  receiver.join();
  EXPECT_EQ(got, k_messages);
  EXPECT_EQ(net.endpoint(0).stats().peak_sends_in_flight, 1u);
}

TEST(fake_transport, send_cap_must_be_positive) {
  apgas::options options;
  options.max_outstanding_sends = 0;
  EXPECT_THROW(fake_network(2, options), std::invalid_argument);
}

// ---- loopback -------------------------------------------------------------------------------

TEST(fake_transport, loopback_to_here) {
  fake_network net(1);
  transport& t = net.endpoint(0);
  EXPECT_EQ(t.here(), 0u);
  EXPECT_EQ(t.places(), 1u);
  std::uint64_t got = 0;
  t.set_handler([&](place_id from, std::span<const std::byte> m) {
    EXPECT_EQ(from, 0u);
    EXPECT_EQ(decode(m).seq, got);
    ++got;
  });
  for (std::uint64_t i = 0; i < 100; ++i) t.send(0, encode(0, 0, i));
  EXPECT_FALSE(t.quiescent());
  t.flush();
  ASSERT_TRUE(poll_until(t, [&] { return got == 100; }));
  const transport_stats s = t.stats();
  EXPECT_EQ(s.logical_messages_sent, 100u);
  EXPECT_EQ(s.logical_messages_received, 100u);
  EXPECT_EQ(s.mpi_messages_sent, 0u); // loopback never uses the network
  EXPECT_TRUE(t.quiescent());
}

TEST(fake_transport, loopback_and_remote_mixed_keep_order) {
  fake_network net(2);
  std::array<std::uint64_t, 2> next{0, 0};
  net.endpoint(1).set_handler([](place_id, std::span<const std::byte>) {});
  net.endpoint(0).set_handler(
      [&](place_id from, std::span<const std::byte> m) { EXPECT_EQ(decode(m).seq, next[from]++); });
  for (std::uint64_t i = 0; i < 500; ++i) {
    net.endpoint(0).send(0, encode(0, 0, i));
    net.endpoint(1).send(0, encode(1, 0, i));
  }
  ASSERT_TRUE(poll_until(net, [&] { return next[0] == 500 && next[1] == 500; }));
}

// ---- corrupt frames -------------------------------------------------------------------------

std::vector<std::byte> frames(std::initializer_list<std::uint32_t> lengths, std::size_t extra) {
  std::vector<std::byte> out;
  for (std::uint32_t length : lengths) {
    const auto* p = reinterpret_cast<const std::byte*>(&length);
    out.insert(out.end(), p, p + sizeof length);
    out.insert(out.end(), length, std::byte{0x5a});
  }
  out.insert(out.end(), extra, std::byte{0});
  return out;
}

TEST(fake_transport, validate_frames_finds_corruption) {
  EXPECT_FALSE(validate_frames({}).has_value());
  const auto good = frames({3, 0, 10}, 0);
  EXPECT_FALSE(validate_frames(good).has_value());
  EXPECT_EQ(count_frames(good), 3u);

  const auto cut_header = frames({3}, 2); // 2 stray bytes: a cut length prefix
  const auto e1 = validate_frames(cut_header);
  ASSERT_TRUE(e1.has_value());
  EXPECT_EQ(e1->offset, 7u);
  EXPECT_EQ(e1->remaining, 2u);

  auto too_long = frames({3, 8}, 0);
  too_long.pop_back(); // the second frame claims 8, 7 follow
  const auto e2 = validate_frames(too_long);
  ASSERT_TRUE(e2.has_value());
  EXPECT_EQ(e2->offset, 7u);
  EXPECT_EQ(e2->claimed, 8u);
  EXPECT_NE(describe(*e2, 3).find("place 3"), std::string::npos);

  // A length near 2^32 must not overflow the bounds check.
  const std::uint32_t huge = 0xffffffffu;
  std::array<std::byte, 8> huge_frame{};
  std::memcpy(huge_frame.data(), &huge, sizeof huge);
  const auto e3 = validate_frames(huge_frame);
  ASSERT_TRUE(e3.has_value());
  EXPECT_EQ(e3->claimed, huge & ~k_routed_flag); // the top bit marks a routed frame
}

TEST(fake_transport, corrupt_network_message_is_an_error_not_a_crash) {
  fake_network net(2);
  ignore_all(net.endpoint(0));
  std::vector<std::uint64_t> got;
  transport& b = net.endpoint(1);
  b.set_handler([&](place_id, std::span<const std::byte> m) { got.push_back(decode(m).seq); });

  // A good frame followed by a cut one: the whole network message is rejected.
  auto bad = frames({}, 0);
  const auto good = encode(0, 0, 99);
  const std::uint32_t length = sizeof(record);
  bad.insert(bad.end(), reinterpret_cast<const std::byte*>(&length),
             reinterpret_cast<const std::byte*>(&length) + 4);
  bad.insert(bad.end(), good.begin(), good.end());
  const std::uint32_t lie = 1000;
  bad.insert(bad.end(), reinterpret_cast<const std::byte*>(&lie),
             reinterpret_cast<const std::byte*>(&lie) + 4);
  bad.insert(bad.end(), 10, std::byte{1});
  net.inject(0, 1, bad);
  try {
    b.poll();
    ADD_FAILURE() << "poll() accepted a corrupt network message";
  } catch (const transport_error& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(got.empty());
  // The transport goes on working.
  net.endpoint(0).send(1, encode(0, 0, 7));
  net.endpoint(0).flush();
  ASSERT_TRUE(poll_until(net, [&] { return got.size() == 1; }));
  EXPECT_EQ(got[0], 7u);
}

TEST(fake_transport, handler_exception_does_not_lose_later_messages) {
  fake_network net(2);
  ignore_all(net.endpoint(0));
  std::vector<std::uint64_t> got;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    const std::uint64_t seq = decode(m).seq;
    got.push_back(seq);
    if (seq == 3) throw std::runtime_error("handler failure");
  });
  for (std::uint64_t i = 0; i < 10; ++i) net.endpoint(0).send(1, encode(0, 0, i));
  net.endpoint(0).flush();
  EXPECT_THROW(poll_until(net, [&] { return got.size() == 10; }), std::runtime_error);
  ASSERT_TRUE(poll_until(net, [&] { return got.size() == 10; }));
  for (std::uint64_t i = 0; i < 10; ++i) EXPECT_EQ(got[i], i);
}

TEST(fake_transport, batch_end_follows_every_delivering_poll_even_when_a_handler_throws) {
  fake_network net(2);
  ignore_all(net.endpoint(0));
  std::vector<std::uint64_t> got;
  std::size_t handled_at_last_end = 0;
  std::size_t batch_ends = 0;
  transport& receiver = net.endpoint(1);
  receiver.set_handler([&](place_id, std::span<const std::byte> m) {
    const std::uint64_t seq = decode(m).seq;
    got.push_back(seq);
    if (seq == 3) throw std::runtime_error("handler failure");
  });
  receiver.set_batch_end_handler([&] {
    ++batch_ends;
    handled_at_last_end = got.size();
  });
  EXPECT_EQ(receiver.poll(), 0u);
  EXPECT_EQ(batch_ends, 0u) << "a poll that delivered nothing ends no batch";
  for (std::uint64_t i = 0; i < 10; ++i) net.endpoint(0).send(1, encode(0, 0, i));
  net.endpoint(0).flush();
  EXPECT_THROW(poll_until(receiver, [&] { return got.size() == 10; }), std::runtime_error);
  EXPECT_EQ(handled_at_last_end, got.size()) << "the batch ended after the handler that threw";
  const std::size_t ends_before = batch_ends;
  EXPECT_GE(ends_before, 1u);
  ASSERT_TRUE(poll_until(receiver, [&] { return got.size() == 10; }));
  EXPECT_GT(batch_ends, ends_before);
  EXPECT_EQ(handled_at_last_end, 10u);
}

// ---- re-entrancy ----------------------------------------------------------------------------

TEST(fake_transport, handler_replies_ping_pong) {
  fake_network net(2);
  constexpr std::uint64_t k_hops = 1000;
  std::uint64_t last = 0;
  for (place_id p = 0; p < 2; ++p) {
    transport& t = net.endpoint(p);
    t.set_handler([&t, &last, p](place_id from, std::span<const std::byte> m) {
      EXPECT_EQ(from, 1 - p);
      const std::uint64_t hop = decode(m).seq;
      last = hop;
      if (hop < k_hops) {
        t.send(from, encode(p, 0, hop + 1)); // re-entrant send from the handler
        t.flush();                           // and flush
        t.poll();                            // and a nested poll (no delivery)
      }
    });
  }
  net.endpoint(0).send(1, encode(0, 0, 1));
  net.endpoint(0).flush();
  ASSERT_TRUE(poll_until(net, [&] { return last == k_hops; }));
}

TEST(fake_transport, handler_chain_on_loopback_terminates_polls) {
  fake_network net(1);
  transport& t = net.endpoint(0);
  std::uint64_t last = 0;
  t.set_handler([&](place_id, std::span<const std::byte> m) {
    last = decode(m).seq;
    if (last < 100) {
      t.send(0, encode(0, 0, last + 1));
      t.flush();
    }
  });
  t.send(0, encode(0, 0, 1));
  t.flush();
  std::size_t polls = 0;
  ASSERT_TRUE(poll_until(t, [&] {
    ++polls;
    return last == 100;
  }));
  EXPECT_GT(polls, 2u); // each poll delivers only what was pending when it started
}

/// Two places whose handlers reply (a padding message and the next hop) while the limits in
/// `options` hold their sends back: waits inside handlers must not deadlock.
void handlers_under_pressure(const apgas::options& options) {
  fake_network net(2, options, /*seed=*/9, /*reorder=*/true);
  constexpr std::uint64_t k_chains = 400;
  constexpr std::uint64_t k_hops = 50;
  constexpr std::uint64_t k_total = 2 * k_chains * (k_hops + 1);
  std::atomic<std::uint64_t> delivered{0};
  std::array<std::uint64_t, 2> waits_in_handlers{0, 0}; // each touched by one thread only
  std::vector<std::byte> padding(200, std::byte{0x33});
  for (place_id p = 0; p < 2; ++p) {
    transport& t = net.endpoint(p);
    t.set_handler([&, p](place_id from, std::span<const std::byte> m) {
      // relaxed: a counter the threads poll on; nothing is published through it.
      delivered.fetch_add(1, std::memory_order_relaxed);
      if (m.size() == padding.size()) return;
      const std::uint64_t hop = decode(m).seq;
      if (hop == 0) return;
      // Only this place's thread sends on this endpoint, so the difference is ours.
      const std::uint64_t before = t.stats().backpressure_waits;
      t.send(from, padding); // bulk that trips back-pressure inside the handler
      t.send(from, encode(p, 0, hop - 1));
      waits_in_handlers[p] += t.stats().backpressure_waits - before;
    });
  }
  std::vector<std::thread> threads;
  for (place_id p = 0; p < 2; ++p) {
    threads.emplace_back([&, p] {
      transport& t = net.endpoint(p);
      for (std::uint64_t c = 0; c < k_chains; ++c) t.send(1 - p, encode(p, 0, k_hops));
      // Each hop also sends one padding message: 2 * chains * hops more deliveries.
      EXPECT_TRUE(poll_until(t, [&] {
        return delivered.load(std::memory_order_relaxed) == k_total + 2 * k_chains * k_hops;
      }));
      t.barrier();
    });
  }
  for (auto& th : threads) th.join();
  const std::uint64_t waits =
      net.endpoint(0).stats().backpressure_waits + net.endpoint(1).stats().backpressure_waits;
  const std::uint64_t inside = waits_in_handlers[0] + waits_in_handlers[1];
  std::cout << "[ reentry  ] " << waits << " back-pressure waits, " << inside
            << " of them inside handlers\n";
  EXPECT_GT(inside, 0u);
  for (place_id p = 0; p < 2; ++p)
    EXPECT_LE(net.endpoint(p).stats().peak_sends_in_flight, options.max_outstanding_sends);
}

TEST(fake_transport, handlers_sending_under_back_pressure_do_not_deadlock) {
  apgas::options options;
  options.coalesce_bytes = 512;
  options.max_outstanding_bytes = 1024;
  handlers_under_pressure(options);
}

TEST(fake_transport, handlers_sending_under_the_send_cap_do_not_deadlock) {
  apgas::options options;
  options.coalesce = false;          // every send is a network message (a send request)
  options.max_outstanding_sends = 2; // so that handlers' replies hit the cap, not the bytes
  handlers_under_pressure(options);
}

// ---- barrier and quiescence -----------------------------------------------------------------

TEST(fake_transport, barrier_separates_rounds) {
  constexpr place_id k_places = 4;
  constexpr int k_rounds = 50;
  fake_network net(k_places, {}, 3, true);
  std::array<std::atomic<int>, k_rounds> arrived{};
  std::array<std::atomic<std::uint64_t>, k_places> got{};
  for (place_id p = 0; p < k_places; ++p)
    net.endpoint(p).set_handler([&got, p](place_id, std::span<const std::byte>) {
      got[p].fetch_add(1, std::memory_order_relaxed); // relaxed: read after join()
    });
  std::vector<std::thread> threads;
  for (place_id p = 0; p < k_places; ++p) {
    threads.emplace_back([&, p] {
      transport& t = net.endpoint(p);
      for (int r = 0; r < k_rounds; ++r) {
        t.send((p + 1) % k_places, encode(p, 0, static_cast<std::uint64_t>(r)));
        // relaxed: the barrier's own synchronisation orders these.
        arrived[r].fetch_add(1, std::memory_order_relaxed);
        t.barrier();
        EXPECT_EQ(arrived[r].load(std::memory_order_relaxed), static_cast<int>(k_places))
            << "left barrier " << r << " before everyone arrived";
      }
      EXPECT_TRUE(poll_until(t, [&] {
        return got[p].load(std::memory_order_relaxed) == static_cast<std::uint64_t>(k_rounds);
      }));
    });
  }
  for (auto& th : threads) th.join();
}

TEST(fake_transport, all_gather_gives_every_place_every_value_in_place_order) {
  constexpr place_id k_places = 3;
  fake_network net(k_places);
  std::array<std::vector<std::vector<std::uint64_t>>, k_places> seen;
  std::vector<std::thread> threads;
  for (place_id p = 0; p < k_places; ++p) {
    ignore_all(net.endpoint(p));
    threads.emplace_back([&, p] {
      for (std::uint64_t round = 0; round < 20; ++round)
        seen[p].push_back(net.endpoint(p).all_gather(100 * round + p));
    });
  }
  for (auto& th : threads) th.join();
  for (place_id p = 0; p < k_places; ++p) {
    ASSERT_EQ(seen[p].size(), 20u);
    for (std::uint64_t round = 0; round < 20; ++round)
      EXPECT_EQ(seen[p][round],
                (std::vector<std::uint64_t>{100 * round, 100 * round + 1, 100 * round + 2}))
          << "place " << p << ", round " << round;
  }
}

TEST(fake_transport, quiescent_tracks_buffered_and_in_flight) {
  fake_network net(2);
  transport& a = net.endpoint(0);
  transport& b = net.endpoint(1);
  ignore_all(a);
  std::uint64_t got = 0;
  b.set_handler([&](place_id, std::span<const std::byte>) { ++got; });
  EXPECT_TRUE(a.quiescent());
  EXPECT_TRUE(b.quiescent());
  a.send(1, encode(0, 0, 0));
  EXPECT_FALSE(a.quiescent()); // buffered
  a.flush();
  EXPECT_FALSE(a.quiescent()); // in flight: b has not taken it
  ASSERT_TRUE(poll_until(b, [&] { return got == 1; }));
  EXPECT_TRUE(a.quiescent());
  EXPECT_TRUE(b.quiescent());
}

TEST(fake_transport, large_messages_between_small_ones) {
  fake_network net(2);
  ignore_all(net.endpoint(0));
  std::vector<std::size_t> sizes;
  std::uint64_t bad = 0;
  net.endpoint(1).set_handler([&](place_id, std::span<const std::byte> m) {
    sizes.push_back(m.size());
    for (std::size_t i = 0; i < m.size(); ++i)
      bad += m[i] != static_cast<std::byte>((i * 31 + m.size()) & 0xff);
  });
  const std::vector<std::size_t> plan = {10, 200000, 3, 0, 65536, 65532, 1};
  for (std::size_t n : plan) {
    std::vector<std::byte> m(n);
    for (std::size_t i = 0; i < n; ++i) m[i] = static_cast<std::byte>((i * 31 + n) & 0xff);
    net.endpoint(0).send(1, m);
  }
  net.endpoint(0).flush();
  ASSERT_TRUE(poll_until(net, [&] { return sizes.size() == plan.size(); }));
  EXPECT_EQ(sizes, plan);
  EXPECT_EQ(bad, 0u);
}

TEST(fake_transport, preconditions_are_checked) {
  fake_network net(2);
  EXPECT_THROW(net.endpoint(0).send(2, {}), std::out_of_range);
  EXPECT_THROW(net.endpoint(2), std::out_of_range);
  EXPECT_THROW(fake_network(0), std::invalid_argument);
}

} // namespace
