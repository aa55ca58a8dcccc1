// Damaged messages against every message handler of a place (no MPI): messages of each kind,
// well-formed first, then truncated, with bits flipped, with fields replaced by random values,
// and wholly random, are handed to the dispatcher as a poll would. Each must be handled or refused
// with an exception (which the dispatcher turns into a clear end of the job), never read out of
// bounds, crash or jump to code that is not a registered entry point. Run under ASan and UBSan
// by the sanitizer preset. Deterministic (seeded) and bounded in time for CI.
#include <apgas/apgas.hpp>
#include <apgas/detail/exception_codec.hpp>
#include <apgas/detail/message_dispatcher.hpp>
#include <apgas/detail/message_format.hpp>
#include <apgas/detail/place_modules.hpp>
#include <apgas/detail/scheduler.hpp>

#include "../fake_places.hpp"
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace apgas::detail;

std::atomic<long> g_ran{0}; // what the registered remote functions below did

/// Place 1 of a network of 3, with every module the runtime builds; the test thread is its only
/// message handler (the scheduler never polls: it has no network).
struct fuzzed_place {
  fuzzed_place() {
    // Places 0 and 2 take what place 1 sends them and drop it: a message to them waits in
    // the network until their endpoint polls (back-pressure), and the destructor drains them.
    for (place_id other : {place_id{0}, place_id{2}})
      network.endpoint(other).set_handler([](place_id, std::span<const std::byte>) {});
    modules = add_place_modules(place.dispatcher, place.sched.opts());
    active_messages::set_current(modules.messages);
  }
  ~fuzzed_place() {
    // The activities that damaged-but-valid messages started run to their end first (a
    // scheduler that stops leaves queued items behind).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    // Their reports to places 0 and 2 need room in the network: those places take them.
    while ((place.sched.work_visible() || place.sched.parked_workers() != 1) &&
           std::chrono::steady_clock::now() < deadline) {
      for (place_id other : {place_id{0}, place_id{2}}) network.endpoint(other).poll();
      std::this_thread::yield();
    }
    // Joining the worker orders its last strand ends (which touch the proxies) before the
    // modules free them (with the dispatcher); its going to sleep alone does not.
    place.sched.stop();
    active_messages::set_current(nullptr);
  }
  fake_network network{3};
  apgas_test::fake_place place{network, 1};
  message_dispatcher& dispatcher = place.dispatcher;
  place_modules modules{};
};

/// Well-formed bodies of each kind (after their kind byte), to be damaged.
struct sample {
  std::string kind;
  std::vector<std::byte> body;
};

template <class... T>
std::vector<std::byte> packed(const T&... fields) {
  const auto head = pack_head(fields...);
  return {head.begin(), head.end()};
}

/// Offsets of functions registered as entry points of each kind, through the public API's own
/// registration (an async_at and an at of them, never sent here).
std::int64_t plain_entry() {
  constexpr auto fn = &run_plain_async<decltype([](long x) { g_ran += x; }), long>;
  (void)registered_entry<fn, code_kind::plain_async>::value;
  return code_offset(reinterpret_cast<const void*>(fn));
}

/// The object an aggregator's batch updates in the samples. Its update never touches it: a
/// damaged batch may carry a target whose address is garbage (an argument, as the user's
/// global_refs are: the runtime checks its place, not what it points to).
struct batch_target {};
struct count_update {
  void operator()(batch_target&, long x) const { g_ran += x; }
};
std::int64_t batch_entry() {
  constexpr auto fn = &run_update_batch<count_update, batch_target, long>;
  (void)registered_entry<fn, code_kind::batch>::value;
  return code_offset(reinterpret_cast<const void*>(fn));
}

std::vector<sample> samples(const message_dispatcher& dispatcher) {
  std::vector<sample> s;
  const std::int64_t plain = plain_entry();
  const place_id home = 0;
  const std::uint64_t serial = 7;
  // Activities of a finish homed at place 0 (a proxy opens here).
  s.push_back({"plain async", packed(home, serial, plain, std::int64_t{5})});
  std::vector<std::byte> run = packed(home, serial, plain, std::uint32_t{8});
  run.resize(31); // a merge_head without its kind: 31 bytes
  for (long v : {1L, 2L, 3L}) {
    const auto a = packed(v);
    run.insert(run.end(), a.begin(), a.end());
  }
  s.push_back({"plain run", run});
  {
    static batch_target target; // here, at place 1
    const apgas::global_ref<batch_target> ref = [] {
      // A reference made as place 1 would: its home is this place.
      std::array<std::byte, sizeof(apgas::global_ref<batch_target>)> bytes{};
      const place_id home = 1;
      const auto address = reinterpret_cast<std::uintptr_t>(&target);
      std::memcpy(bytes.data(), &home, sizeof home);
      std::memcpy(bytes.data() + 8, &address, sizeof address);
      return std::bit_cast<apgas::global_ref<batch_target>>(bytes);
    }();
    std::vector<std::byte> batch = packed(home, serial, batch_entry());
    const auto r = packed(ref, 4L, 5L, 6L);
    batch.insert(batch.end(), r.begin(), r.end());
    s.push_back({"batch", batch});
  }
  s.push_back({"async", packed(home, serial, plain, std::int64_t{5})});
  s.push_back({"at", packed(home, serial, plain, std::uint64_t{1}, std::int64_t{5})});
  s.push_back({"rpc", packed(plain, std::uint64_t{1}, std::int64_t{5})});
  s.push_back({"reply", packed(std::uint64_t{1}, std::uint8_t{1}, std::int64_t{5})});
  // Control messages of finishes (a report for a finish homed here that does not exist).
  {
    std::vector<std::byte> report;
    apgas::byte_writer w(report);
    apgas::serialize_all(w, place_id{1}, serial, std::uint64_t{0}, std::uint64_t{1},
                         std::vector<std::pair<place_id, std::uint64_t>>{{2, 1}});
    // Its errors: a count, then each as the exception codec writes it (a nested one).
    w.write_length(1);
    const auto failure = std::make_exception_ptr(std::out_of_range("an error"));
    write_exception(w, std::make_exception_ptr(apgas::multiple_exceptions({failure, failure})), 0);
    s.push_back({"finish report", report});
  }
  s.push_back({"finish ask", packed(home, serial)});
  s.push_back({"finish cleanup", packed(home, serial)});
  // ok flag, value
  s.push_back({"run end", packed(std::uint8_t{1}, std::int64_t{42})});
  // Tree messages carrying a cleanup (down) and an ask (up, for a root elsewhere).
  {
    std::vector<std::byte> down;
    apgas::byte_writer w(down);
    apgas::serialize_all(w, place_id{0}, dispatcher.kind_named("finish cleanup"),
                         std::vector<place_id>{1});
    w.write_bytes(packed(home, serial).data(), 12);
    s.push_back({"tree down", down});
    std::vector<std::byte> up =
        packed(std::uint32_t{1}, place_id{0}, dispatcher.kind_named("finish ask"), place_id{2},
               std::uint32_t{12});
    const auto id = packed(home, serial);
    up.insert(up.end(), id.begin(), id.end());
    s.push_back({"tree up", up});
  }
  return s;
}

/// Hands `body` to the handler of `kind`, as place 0 would send it. Refusals are expected.
void deliver(fuzzed_place& p, apgas::detail::message_kind kind, std::span<const std::byte> body,
             long& refused) {
  try {
    p.dispatcher.handle(0, kind, body);
    p.dispatcher.end_delivery(); // as the end of a poll's deliveries does
  } catch (const std::exception&) {
    ++refused;
    p.dispatcher.end_delivery();
  }
}

TEST(message_fuzz, damaged_messages_are_handled_or_refused_never_crash) {
  fuzzed_place p;
  std::mt19937_64 rng(20261125);
  const auto all = samples(p.dispatcher);
  long delivered = 0;
  long refused = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int round = 0; round < 4000 && std::chrono::steady_clock::now() < deadline; ++round) {
    for (const sample& s : all) {
      const message_kind kind = p.dispatcher.kind_named(s.kind);
      ASSERT_NE(kind, 0) << s.kind;
      std::vector<std::byte> body = s.body;
      switch (rng() % 5) {
      case 0: // truncated
        body.resize(rng() % (body.size() + 1));
        break;
      case 1: // bits flipped
        for (int i = 0, n = 1 + static_cast<int>(rng() % 4); i < n && !body.empty(); ++i)
          body[rng() % body.size()] ^= static_cast<std::byte>(1U << (rng() % 8));
        break;
      case 2: { // a 4- or 8-byte field replaced by a random value
        if (body.size() < 8) break;
        const std::uint64_t v = rng();
        std::memcpy(body.data() + rng() % (body.size() - 7), &v, rng() % 2 ? 8 : 4);
        break;
      }
      case 3: // random bytes of a random length
        body.resize(rng() % 96);
        for (std::byte& b : body) b = static_cast<std::byte>(rng());
        break;
      default: // bytes appended
        for (int i = 0, n = 1 + static_cast<int>(rng() % 16); i < n; ++i)
          body.push_back(static_cast<std::byte>(rng()));
      }
      deliver(p, kind, body, refused);
      ++delivered;
    }
  }
  // Messages of kinds nobody registered are refused too.
  for (unsigned kind = 200; kind < 256; ++kind)
    deliver(p, static_cast<message_kind>(kind), std::span<const std::byte>{}, refused);
  EXPECT_GT(delivered, 1000);
  EXPECT_GT(refused, delivered / 2) << "most damaged messages should be refused";
}

TEST(message_fuzz, a_code_offset_that_names_no_entry_point_is_refused) {
  fuzzed_place p;
  // The code offset of a function that exists but was never registered as an entry point.
  const std::int64_t stray = code_offset(reinterpret_cast<const void*>(&code_anchor));
  long refused = 0;
  const auto body = packed(place_id{0}, std::uint64_t{7}, stray, std::int64_t{5});
  deliver(p, p.dispatcher.kind_named("plain async"), body, refused);
  deliver(p, p.dispatcher.kind_named("rpc"), packed(stray, std::uint64_t{1}), refused);
  EXPECT_EQ(refused, 2);
}

TEST(message_fuzz, a_reply_to_no_waiting_request_is_refused) {
  fuzzed_place p;
  long refused = 0;
  for (std::uint64_t token : {std::uint64_t{0}, std::uint64_t{1} << 32, ~std::uint64_t{0}})
    deliver(p, p.dispatcher.kind_named("reply"), packed(token, std::uint8_t{1}), refused);
  EXPECT_EQ(refused, 3);
}

} // namespace
