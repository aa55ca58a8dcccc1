// The MPI transport under mpiexec -n 1, 2, 4 (a plain main: exit code 0 = pass).
//   1. all-to-all of many small messages (and a few large ones) with checksums: counts, per-source
//      order, and a coalescing ratio > 10; the last buffers leave by the flush interval alone;
//      then the same with three threads per rank sending at once;
//   2. barrier correctness: nobody leaves round r before everyone entered it (same-host
//      monotonic clock), and messages sent before a barrier are delivered;
//   3. the exchange again without coalescing: one MPI message per remote send;
//   4. three threads per rank against a tiny back-pressure limit (large messages included);
//   5. three threads per rank without coalescing against a cap of 8 live send requests
//      (max_outstanding_sends): never more than 8 MPI_Isend requests alive, all delivered.
// Messages of a phase may arrive while their receiver is still in the previous phase's barrier
// (barrier() keeps delivering), so one handler serves all phases, dispatching on a header field.
// Prints one summary line per rank.
#include "apgas/detail/transport.hpp"

#include "mpi_process.hpp"
#include "mpi_transport.hpp"
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace apgas::detail;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr auto k_timeout = 60s;
constexpr std::uint32_t k_barrier_phase = 0xffffffffu;

/// Header of every test message; data messages carry a pattern derived from it after it.
struct header {
  std::uint32_t source;
  std::uint32_t phase;  ///< index of the data phase, or k_barrier_phase
  std::uint32_t thread; ///< sending thread (data)
  std::uint32_t unused;
  std::uint64_t seq;   ///< per (source, thread, destination) stream; or the barrier round
  std::uint64_t value; ///< data: checksum; barrier: entry time (ns, steady clock)
  std::uint64_t host;  ///< barrier: hash of the host name
};

std::uint64_t checksum(std::uint32_t source, std::uint64_t seq, std::size_t size) {
  return (seq * 0x9e3779b97f4a7c15ull) ^ (std::uint64_t{source} << 48) ^ size;
}

std::byte pattern(std::uint64_t seq, std::size_t i) {
  return static_cast<std::byte>((seq * 131 + i * 7) & 0xff);
}

/// Payload size of data message `seq`: mostly 0..40 bytes, every 5000th one 150 kB (bigger than
/// a coalescing buffer, so it travels alone, in order with the small ones).
std::size_t payload_size(std::uint64_t seq) {
  return seq % 5000 == 4999 ? 150000 : static_cast<std::size_t>((seq * 13) % 41);
}

std::uint64_t host_hash() {
  std::array<char, 256> name{};
  gethostname(name.data(), name.size() - 1);
  std::uint64_t h = 1469598103934665603ull;
  for (const char* c = name.data(); *c != 0; ++c)
    h = (h ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
  return h;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
      .count();
}

[[noreturn]] void give_up(place_id here, const char* what) {
  std::fprintf(stderr, "rank %u: FAIL: timed out waiting for %s\n", here, what);
  std::fflush(stderr);
  mpi_abort(1);
}

void poll_until(transport& t, const std::function<bool()>& done, const char* what) {
  const auto deadline = clock_type::now() + k_timeout;
  while (!done()) {
    if (t.poll() == 0) std::this_thread::yield();
    if (clock_type::now() > deadline) give_up(t.here(), what);
  }
}

/// Expectations and observations of one data phase.
struct data_phase {
  std::uint32_t threads = 1;
  std::uint64_t count = 0;         ///< per thread and destination
  std::vector<std::uint64_t> next; ///< next seq per (source, thread)
  std::uint64_t received = 0;
};

/// One barrier round's entry announcement, as received.
struct entry {
  std::int64_t time = 0;
  std::uint64_t host = 0;
  bool seen = false;
};

/// Everything the handler touches. Handlers run one at a time (the poll lock), on whichever
/// thread polls, so no further synchronisation is needed.
struct test_state {
  place_id here = 0;
  place_id places = 1;
  int failures = 0;
  std::vector<data_phase> phases;
  std::vector<std::vector<entry>> rounds; ///< [round][source]
  bool inside_barrier = false;
  int delivered_inside_barrier = 0;

  void fail(const std::string& what) {
    if (++failures <= 10) std::fprintf(stderr, "rank %u: FAIL: %s\n", here, what.c_str());
  }

  void on_message(place_id from, std::span<const std::byte> m) {
    header h{};
    if (m.size() < sizeof h) return fail("short message from " + std::to_string(from));
    std::memcpy(&h, m.data(), sizeof h);
    if (h.source != from) return fail("header names the wrong source");
    if (h.phase == k_barrier_phase) return on_entry(from, h, m.size());
    if (h.phase >= phases.size()) return fail("unknown phase " + std::to_string(h.phase));
    data_phase& ph = phases[h.phase];
    if (h.thread >= ph.threads) return fail("bad thread from " + std::to_string(from));
    std::uint64_t& expected = ph.next[std::size_t{from} * ph.threads + h.thread];
    if (h.seq != expected)
      return fail("order: phase " + std::to_string(h.phase) + " from " + std::to_string(from) +
                  "/" + std::to_string(h.thread) + " got seq " + std::to_string(h.seq) +
                  ", expected " + std::to_string(expected));
    expected = h.seq + 1;
    const std::size_t size = m.size() - sizeof h;
    if (size != payload_size(h.seq) || h.value != checksum(from, h.seq, size))
      return fail("checksum of seq " + std::to_string(h.seq) + " from " + std::to_string(from));
    for (std::size_t i = 0; i < size; ++i)
      if (m[sizeof h + i] != pattern(h.seq, i))
        return fail("payload of seq " + std::to_string(h.seq) + " from " + std::to_string(from));
    ++ph.received;
  }

  void on_entry(place_id from, const header& h, std::size_t size) {
    if (size != sizeof h || h.seq >= rounds.size()) return fail("bad barrier message");
    entry& e = rounds[h.seq][from];
    if (e.seen) return fail("duplicate barrier message");
    e = entry{static_cast<std::int64_t>(h.value), h.host, true};
    delivered_inside_barrier += inside_barrier ? 1 : 0;
  }

  std::uint32_t add_phase(std::uint32_t threads, std::uint64_t count) {
    data_phase ph;
    ph.threads = threads;
    ph.count = count;
    ph.next.assign(std::size_t{places} * threads, 0);
    phases.push_back(std::move(ph));
    return static_cast<std::uint32_t>(phases.size() - 1);
  }
};

/// Every one of the phase's threads sends `count` data messages to every place (itself
/// included), interleaved; the calling thread then polls until everything arrived.
/// With `flush_at_end` false the tail leaves by the flush interval alone.
void exchange(transport& t, test_state& s, std::uint32_t phase, bool flush_at_end) {
  const place_id p = t.places();
  const place_id me = t.here();
  const data_phase& ph = s.phases[phase];
  auto send_share = [&, count = ph.count](std::uint32_t thread) {
    std::vector<std::byte> buffer;
    for (std::uint64_t seq = 0; seq < count; ++seq) {
      const std::size_t size = payload_size(seq);
      const header h{me, phase, thread, 0, seq, checksum(me, seq, size), 0};
      buffer.resize(sizeof h + size);
      std::memcpy(buffer.data(), &h, sizeof h);
      for (std::size_t i = 0; i < size; ++i) buffer[sizeof h + i] = pattern(seq, i);
      for (place_id k = 0; k < p; ++k) t.send((me + k) % p, buffer);
      if (seq % 128 == 0) t.poll(); // from several threads: only one gets the poll lock
    }
  };
  std::vector<std::thread> helpers;
  for (std::uint32_t th = 1; th < ph.threads; ++th) helpers.emplace_back(send_share, th);
  send_share(0);
  for (std::thread& h : helpers) h.join();
  if (flush_at_end) t.flush();
  const std::uint64_t expected = ph.count * p * ph.threads;
  poll_until(
      t, [&] { return s.phases[phase].received == expected; }, "all-to-all messages");
  t.barrier();
  for (std::size_t i = 0; i < ph.next.size(); ++i)
    if (ph.next[i] != ph.count) s.fail("missing messages from " + std::to_string(i / ph.threads));
}

/// Barrier rounds: rank r enters round k late by (r + k) % p milliseconds, announces its entry
/// time to everyone, and checks on exit that nobody entered after it left.
int barriers(transport& t, test_state& s) {
  const place_id p = t.places();
  const place_id me = t.here();
  const std::uint64_t host = host_hash();
  int checked = 0;
  for (std::size_t r = 0; r < s.rounds.size(); ++r) {
    // Ranks enter each round at different moments (the barrier must hold them all anyway).
    const auto enter_at =
        std::chrono::steady_clock::now() + std::chrono::milliseconds((me + r) % p);
    while (std::chrono::steady_clock::now() < enter_at) std::this_thread::yield();
    const header h{me, k_barrier_phase, 0, 0, r, static_cast<std::uint64_t>(now_ns()), host};
    for (place_id k = 0; k < p; ++k)
      t.send(k, std::span(reinterpret_cast<const std::byte*>(&h), sizeof h));
    s.inside_barrier = true;
    t.barrier();
    s.inside_barrier = false;
    const std::int64_t left = now_ns();
    const auto& round = s.rounds[r];
    poll_until(
        t,
        [&] {
          return std::all_of(round.begin(), round.end(), [](const entry& e) { return e.seen; });
        },
        "barrier entry announcements");
    if (std::all_of(round.begin(), round.end(), [&](const entry& e) { return e.host == host; })) {
      ++checked;
      for (place_id src = 0; src < p; ++src)
        if (round[src].time > left)
          s.fail("left barrier " + std::to_string(r) + " before rank " + std::to_string(src) +
                 " entered it");
    }
  }
  t.barrier();
  return checked;
}

int run() {
  constexpr std::uint64_t k_messages = 20000;
  test_state s;

  // 1. Coalesced all-to-all; the tail leaves by the flush interval (no flush()).
  apgas::options options;
  auto t = make_mpi_transport(options);
  s.here = t->here();
  s.places = t->places();
  const place_id p = s.places;
  const std::uint32_t single = s.add_phase(1, k_messages);
  const std::uint32_t threaded = s.add_phase(3, k_messages / 4);
  s.rounds.assign(8, std::vector<entry>(p));
  t->set_handler([&s](place_id from, std::span<const std::byte> m) { s.on_message(from, m); });

  const auto t0 = clock_type::now();
  exchange(*t, s, single, /*flush_at_end=*/false);
  const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  const transport_stats after_single = t->stats();
  const std::uint64_t remote = k_messages * (p - 1);
  const double ratio =
      after_single.mpi_messages_sent == 0
          ? 0.0
          : static_cast<double>(remote) / static_cast<double>(after_single.mpi_messages_sent);
  if (after_single.logical_messages_sent != k_messages * p) s.fail("logical sent count");
  if (p > 1 && ratio <= 10.0) s.fail("coalescing ratio " + std::to_string(ratio) + " <= 10");
  if (p == 1 && after_single.mpi_messages_sent != 0) s.fail("loopback used MPI");

  // 1b. Three threads per rank send at once (the network lock serialises MPI).
  exchange(*t, s, threaded, /*flush_at_end=*/true);
  const transport_stats after_threaded = t->stats();
  const std::uint64_t threaded_mpi =
      after_threaded.mpi_messages_sent - after_single.mpi_messages_sent;

  // 2. Barrier correctness; all_gather gives every rank's value, in rank order.
  const int checked = barriers(*t, s);
  for (std::uint64_t round = 0; round < 3; ++round) {
    const std::vector<std::uint64_t> all = t->all_gather(1000 * round + s.here);
    for (place_id k = 0; k < p; ++k)
      if (all.size() != p || all[k] != 1000 * round + k)
        s.fail("all_gather round " + std::to_string(round) + ": wrong value of rank " +
               std::to_string(k));
  }
  poll_until(
      *t, [&] { return t->quiescent(); }, "quiescence"); // last sends complete soon
  const transport_stats final_stats = t->stats();
  if (final_stats.logical_messages_received != final_stats.logical_messages_sent)
    s.fail("received " + std::to_string(final_stats.logical_messages_received) + " of " +
           std::to_string(final_stats.logical_messages_sent) + " (all-to-all: must be equal)");
  t.reset();

  // 3. Without coalescing: one MPI message per remote send.
  options.coalesce = false;
  auto u = make_mpi_transport(options);
  constexpr std::uint64_t k_plain = 2000;
  const std::uint32_t plain = s.add_phase(1, k_plain);
  u->set_handler([&s](place_id from, std::span<const std::byte> m) { s.on_message(from, m); });
  exchange(*u, s, plain, /*flush_at_end=*/true);
  const std::uint64_t plain_mpi = u->stats().mpi_messages_sent;
  if (plain_mpi != k_plain * (p - 1))
    s.fail("without coalescing: " + std::to_string(plain_mpi) + " MPI messages for " +
           std::to_string(k_plain * (p - 1)) + " remote sends");
  u.reset();

  // 4. Tiny buffers and a tiny back-pressure limit, three threads: the 150 kB messages always
  // exceed the limit, so senders must wait while they keep receiving (no deadlock, all arrive).
  options.coalesce = true;
  options.coalesce_bytes = 1024;
  options.max_outstanding_bytes = 4096;
  auto w = make_mpi_transport(options);
  const std::uint32_t pressed = s.add_phase(3, 5000);
  w->set_handler([&s](place_id from, std::span<const std::byte> m) { s.on_message(from, m); });
  exchange(*w, s, pressed, /*flush_at_end=*/true);
  const transport_stats pressed_stats = w->stats();
  if (pressed_stats.backpressure_waits == 0) s.fail("back-pressure never engaged");
  w.reset();

  // 5. Without coalescing every send is an MPI_Isend, and three threads seal them faster than
  // one drain completes them (the 150 kB ones are rendezvous sends, alive until received): the
  // transport must keep at most k_cap requests alive, defer the rest in order, and hold the
  // senders back while it keeps receiving.
  constexpr std::size_t k_cap = 8;
  options = apgas::options{};
  options.coalesce = false;
  options.max_outstanding_sends = k_cap;
  auto c = make_mpi_transport(options);
  const std::uint32_t capped = s.add_phase(3, 5000);
  c->set_handler([&s](place_id from, std::span<const std::byte> m) { s.on_message(from, m); });
  exchange(*c, s, capped, /*flush_at_end=*/true);
  const transport_stats capped_stats = c->stats();
  if (capped_stats.peak_sends_in_flight > k_cap)
    s.fail("send cap: " + std::to_string(capped_stats.peak_sends_in_flight) +
           " requests alive at once, cap " + std::to_string(k_cap));
  if (p > 1 && capped_stats.peak_sends_in_flight == 0)
    s.fail("send cap: no send request was ever counted");
  c.reset();

  // 6. send_now_framed, the path of `at` requests and replies, to every other rank: small frames
  // (an eager MPI send completes at once: sent past the coalescer's counts) and every 50th of
  // 100 kB (a rendezvous send, in flight until received: counted as outstanding meanwhile).
  // Each arrives once, in order per source, is counted as a logical message, and the
  // transport is quiescent afterwards (it would not be if a completion were owed or missing).
  constexpr std::uint64_t k_framed = 400;
  std::uint64_t framed_sent = 0;
  std::uint64_t framed_received = 0;
  {
    auto f = make_mpi_transport(apgas::options{});
    std::vector<std::uint64_t> next(p, 0);
    f->set_handler([&](place_id from, std::span<const std::byte> m) {
      std::uint64_t seq = ~std::uint64_t{0};
      if (m.size() >= sizeof seq) std::memcpy(&seq, m.data(), sizeof seq);
      if (seq != next[from]) s.fail("framed message out of order");
      next[from] = seq + 1;
      ++framed_received;
    });
    std::vector<std::byte> framed;
    for (std::uint64_t i = 0; i < k_framed; ++i) {
      for (place_id to = 0; to < p; ++to) {
        if (to == s.here) continue;
        const std::size_t body = i % 50 == 49 ? 100 * 1000 : 16;
        framed.assign(k_frame_header + body, std::byte{0x5a});
        std::memcpy(framed.data() + k_frame_header, &i, sizeof i);
        f->send_now_framed(to, framed);
        ++framed_sent;
      }
      f->poll();
    }
    poll_until(
        *f, [&] { return framed_received == k_framed * (p - 1); }, "framed messages");
    poll_until(
        *f, [&] { return f->quiescent(); }, "quiescence after framed messages");
    const transport_stats fs = f->stats();
    if (fs.logical_messages_sent != framed_sent)
      s.fail("framed: " + std::to_string(fs.logical_messages_sent) +
             " logical messages counted for " + std::to_string(framed_sent) + " sent");
    if (fs.mpi_messages_sent < framed_sent)
      s.fail("framed: fewer MPI messages than frames sent alone");
    f->barrier();
  }

  std::printf(
      "mpi_transport_test rank %u/%u: %s | all-to-all: %llu msgs received in %.3f s, "
      "%llu remote sends in %llu MPI messages (coalescing ratio %.1f) | 3 threads: %llu "
      "received, %llu MPI messages | barrier: %zu rounds, %d clock-checked, %d msgs "
      "delivered inside | no coalescing: %llu MPI messages | back-pressure: %llu received, %llu "
      "waits | send cap %zu: %llu received, peak %llu requests alive, %llu waits | framed: %llu "
      "sent, %llu received\n",
      s.here, p, s.failures == 0 ? "PASS" : "FAIL",
      static_cast<unsigned long long>(s.phases[single].received), seconds,
      static_cast<unsigned long long>(remote),
      static_cast<unsigned long long>(after_single.mpi_messages_sent), ratio,
      static_cast<unsigned long long>(s.phases[threaded].received),
      static_cast<unsigned long long>(threaded_mpi), s.rounds.size(), checked,
      s.delivered_inside_barrier, static_cast<unsigned long long>(plain_mpi),
      static_cast<unsigned long long>(s.phases[pressed].received),
      static_cast<unsigned long long>(pressed_stats.backpressure_waits), k_cap,
      static_cast<unsigned long long>(s.phases[capped].received),
      static_cast<unsigned long long>(capped_stats.peak_sends_in_flight),
      static_cast<unsigned long long>(capped_stats.backpressure_waits),
      static_cast<unsigned long long>(framed_sent),
      static_cast<unsigned long long>(framed_received));
  std::fflush(stdout);
  return s.failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  try {
    (void)mpi_init(&argc, &argv);
    install_mpi_error_handler();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_transport_test: %s\n", e.what());
    mpi_abort(2);
  }
  int rc = 1;
  try {
    rc = run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_transport_test: exception: %s\n", e.what());
    std::fflush(stderr);
    mpi_abort(1);
  }
  mpi_finalize();
  return rc;
}
